//! The navigation: every kind, grouped by API group, searchable, refreshed live as
//! CRDs come and go.

use std::collections::BTreeMap;

use leptos::prelude::*;

use crate::api::list_resources;
use crate::live::follow;
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::resource::ResourceKind;

fn group_label(group: &str) -> &str {
    if group.is_empty() { "core" } else { group }
}

/// Whether every word typed is in the kind's names or group.
fn matches(k: &ResourceKind, words: &str) -> bool {
    let hay = format!(
        "{} {} {} {}",
        k.kind,
        k.plural,
        k.group,
        k.short_names.join(" ")
    )
    .to_lowercase();
    words.split_whitespace().all(|w| hay.contains(w))
}

/// The kinds matching `words`, as the navigation lists them: CRDs' groups, then the
/// built-in ones, each group's kinds by name.
fn listed(all: Vec<ResourceKind>, words: &str) -> BTreeMap<(bool, String), Vec<ResourceKind>> {
    let mut groups: BTreeMap<(bool, String), Vec<ResourceKind>> = BTreeMap::new();
    for k in all.into_iter().filter(|k| matches(k, words)) {
        groups
            .entry((k.flags.builtin, k.group.clone()))
            .or_default()
            .push(k);
    }
    for items in groups.values_mut() {
        items.sort_by(|a, b| a.kind.cmp(&b.kind));
    }
    groups
}

#[component]
pub fn ResourceNav() -> impl IntoView {
    let kinds = Resource::new(|| (), |_| list_resources());
    let search = RwSignal::new(String::new());

    follow(Topic::Crds, move |message| {
        if matches!(message, ServerMessage::Changed { .. }) {
            kinds.refetch();
        }
    });

    // Enter goes to the first kind listed, as the list shows them.
    let navigate = leptos_router::hooks::use_navigate();
    let go_to_first = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() != "Enter" {
            return;
        }
        let words = search.get_untracked().to_lowercase();
        let first = kinds
            .get_untracked()
            .and_then(Result::ok)
            .and_then(|all| listed(all, &words).into_values().flatten().next());
        if let Some(kind) = first {
            ev.prevent_default();
            navigate(
                &crate::base::url(&kind.resource(None).page_path()),
                Default::default(),
            );
        }
    };
    view! {
        <aside class="sidebar">
            <input
                class="nav-search"
                type="search"
                placeholder="Find a kind…"
                aria-label="Find a kind"
                bind:value=search
                on:keydown=go_to_first
            />
            <Transition fallback=|| view! { <p class="subtle small">"Loading…"</p> }>
                {move || {
                    kinds.get().map(|result| match result {
                        Ok(all) => {
                            let words = search.get().to_lowercase();
                            listed(all, &words).into_iter().map(|((builtin, group), items)| {
                                view! {
                                    <div class="nav-group" class:builtin=builtin>
                                        <div class="nav-group-name">{group_label(&group).to_string()}</div>
                                        {items.into_iter().map(|k| {
                                            let href = crate::base::url(&k.resource(None).page_path());
                                            let title = format!("{} ({})", k.plural, k.short_names.join(", "));
                                            view! { <a class="nav-item" href=href title=title>{k.kind.clone()}</a> }
                                        }).collect_view()}
                                    </div>
                                }
                            }).collect_view().into_any()
                        }
                        Err(e) => view! { <p class="subtle small">{e.to_string()}</p> }.into_any(),
                    })
                }}
            </Transition>
        </aside>
    }
}
