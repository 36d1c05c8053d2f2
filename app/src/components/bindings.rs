//! A Stack's bindings (on its page) or a workload's (on its page), live, with a link
//! to the StackBinding form filled in with what the page already knows.

use leptos::prelude::*;

use crate::components::live_table::LiveTable;
use crate::pages::stack::bind::BindPicker;
use portico_core::encode::percent_encode;
use portico_core::portico_kinds;
use portico_core::table::state::SortKey;

/// Which bindings to list: those of a Stack, or those into a workload.
#[derive(Debug, Clone, PartialEq)]
pub enum BoundBy {
    Stack(String),
    Workload { kind: &'static str, name: String },
}

#[component]
pub fn StackBindings(namespace: String, of: BoundBy) -> impl IntoView {
    // The CRD declares both fields selectable: the API server filters.
    let (selector, prefill, intro) = match &of {
        BoundBy::Stack(name) => (
            format!("spec.stack={name}"),
            format!("&spec.stack={}", percent_encode(name)),
            "Workloads that get this Stack's host, port, database, user, password and URL as environment variables.",
        ),
        BoundBy::Workload { kind, name } => (
            format!("spec.workload.kind={kind},spec.workload.name={name}"),
            format!(
                "&spec.workload.kind={kind}&spec.workload.name={}",
                percent_encode(name)
            ),
            "Stacks whose connection details this workload gets as environment variables.",
        ),
    };
    let query = portico_kinds::table(
        &portico_kinds::bindings(),
        Some(namespace.clone()),
        Some(selector),
    );
    let sort = RwSignal::new(None::<SortKey>);
    let on_sort = Callback::new(move |column: String| {
        sort.update(|s| *s = SortKey::toggled(s.as_ref(), column))
    });
    let href = crate::base::url(&format!(
        "{}/new?ns={}{prefill}",
        portico_kinds::bindings().page_path(),
        percent_encode(&namespace)
    ));
    // A Stack's page binds from a picker; a workload's links to the form, the workload
    // filled in.
    let bind = match of {
        BoundBy::Stack(stack) => {
            view! { <BindPicker namespace=namespace.clone() stack=stack/> }.into_any()
        }
        BoundBy::Workload { .. } => {
            view! { <a class="button" href=href data-testid="bind-link">"Bind a Stack…"</a> }
                .into_any()
        }
    };
    view! {
        <section class="panel" data-testid="stack-bindings">
            <div class="panel-head">
                <h2>"Bindings"</h2>
            </div>
            <p class="subtle small">{intro}</p>
            <div class="panel-actions">{bind}</div>
            <LiveTable
                query=Signal::stored(query)
                wide=false
                filter=String::new()
                sort=sort
                on_sort=on_sort
                link_rows=true
            />
        </section>
    }
}
