//! "What may I do here": for one namespace, every kind Portico lists by verb, grants
//! limited to some objects, and subresources (a terminal needs `create pods/exec`,
//! logs `get pods/log`), from the person's own SelfSubjectRulesReview. Refusals and
//! disabled buttons link here.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::query_signal_with_options;

use crate::api::{fetch_namespace_access, list_namespaces};
use crate::components::error_banner::ErrorBanner;
use crate::components::namespace_picker::NamespaceControl;
use portico_core::access::{NamespaceAccess, VERBS};

#[component]
pub fn AccessPage() -> impl IntoView {
    let (ns, set_ns) = query_signal_with_options::<String>("ns", super::quiet());
    let ns = Signal::derive(move || ns.get().filter(|n| !n.is_empty()));
    // Without one named, the namespace last worked in (once in the browser).
    Effect::new(move |_| {
        if ns.get_untracked().is_none()
            && let Some(last) = crate::last_namespace::recall()
        {
            set_ns.set(Some(last));
        }
    });
    let namespaces = Resource::new(|| (), |_| list_namespaces());
    let access = Resource::new(
        move || ns.get(),
        |ns| async move {
            match ns {
                Some(ns) => fetch_namespace_access(ns).await.map(Some),
                None => Ok(None),
            }
        },
    );
    let everything = RwSignal::new(false);
    view! {
        <Title text="What may I do here"/>
        <div class="page-head">
            <div>
                <h1>"What may I do here"</h1>
                <p class="subtle">"Your Kubernetes permissions in a namespace, as the API server answers for you."</p>
            </div>
            <div class="controls">
                <NamespaceControl namespaces ns=ns set_ns=Callback::new(move |next| set_ns.set(next))/>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="access-everything" bind:checked=everything/>
                    "Show kinds I may not use"
                </label>
            </div>
        </div>
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
            {move || access.get().map(|answer| match answer {
                Ok(Some(access)) => view! { <AccessTable access everything/> }.into_any(),
                Ok(None) => view! { <p class="empty">"Pick or type a namespace."</p> }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn AccessTable(access: NamespaceAccess, everything: RwSignal<bool>) -> impl IntoView {
    let NamespaceAccess {
        namespace,
        kinds,
        subresources,
        incomplete,
        note,
    } = access;
    let usable = kinds.iter().filter(|k| k.any()).count();
    let total = kinds.len();
    let kinds = StoredValue::new(kinds);
    let said = format!(
        "You may use {usable} of the {total} kinds Portico lists in namespace {namespace}."
    );
    let rows = move || {
        let all = everything.get();
        kinds.with_value(|kinds| {
            kinds
                .iter()
                .filter(|k| all || k.any())
                .map(|k| {
                    let href = crate::base::url(&format!(
                        "{}?ns={namespace_q}",
                        k.resource.page_path(),
                        namespace_q = namespace.clone()
                    ));
                    let cells = k
                        .allowed
                        .iter()
                        .zip(VERBS)
                        .map(|(allowed, verb)| {
                            let (mark, label) = if *allowed { ("✓", "allowed") } else { ("—", "not allowed") };
                            view! {
                                <td class="verb" class:allowed=*allowed title=format!("{verb}: {label}") aria-label=format!("{verb}: {label}")>{mark}</td>
                            }
                        })
                        .collect_view();
                    view! {
                        <tr data-kind=k.kind.clone() data-group=k.resource.group.clone()>
                            <td class="kind"><a href=href>{k.kind.clone()}</a><span class="subtle small">{format!(" {}", k.resource.group)}</span></td>
                            {cells}
                            <td class="small">{k.by_name.join("; ")}</td>
                        </tr>
                    }
                })
                .collect_view()
        })
    };
    view! {
        {incomplete.then(|| view! {
            <p class="notice" data-testid="access-incomplete">
                "The API server could not list everything you may do here (another authorizer decides too): what shows as not allowed may still be allowed. "
                {note.clone().unwrap_or_default()}
            </p>
        })}
        <p class="count" data-testid="access-count">{said}</p>
        <table class="grid access" data-testid="access-table">
            <thead>
                <tr>
                    <th>"Kind"</th>
                    {VERBS.iter().map(|v| view! { <th class="verb">{*v}</th> }).collect_view()}
                    <th>"On some objects only"</th>
                </tr>
            </thead>
            <tbody>{rows}</tbody>
        </table>
        {(!subresources.is_empty()).then(|| view! {
            <div class="panel">
                <h2>"Subresources"</h2>
                <ul class="subresources" data-testid="access-subresources">
                    {subresources.into_iter().map(|s| view! { <li class="mono">{s}</li> }).collect_view()}
                </ul>
            </div>
        })}
    }
}
