//! Where a new object goes: the namespaces the person may list, or a typed name when
//! their access lists none (a team's often does not). On the Provision form, those
//! they may create a Stack in come first and the first is picked, not `default`.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::draft::DraftCells;
use crate::api::{list_namespaces, stack_places};
use crate::components::form::use_form;
use crate::last_namespace;
use portico_core::payload::StackPlace;

#[component]
pub fn NamespaceField(draft: DraftCells, for_people: bool) -> impl IntoView {
    let form = use_form();
    form.place("metadata.namespace");
    let namespace = draft.namespace;
    // The generic form lists every namespace; the Provision form asks where the person
    // may create a Stack.
    let places = Resource::new(
        || (),
        move |_| async move {
            if for_people {
                stack_places().await
            } else {
                let names = list_namespaces().await?;
                Ok(names
                    .into_iter()
                    .map(|namespace| StackPlace {
                        namespace,
                        may_create: true,
                    })
                    .collect())
            }
        },
    );
    if for_people {
        // A link naming the namespace (`?ns=`) is kept; otherwise the first the person
        // may create in, or nothing to type over where they may list none.
        let named = use_query_map().with_untracked(|q| q.get("ns").is_some());
        Effect::new(move |_| {
            let Some(Ok(list)) = places.get() else {
                return;
            };
            if named || namespace.get_untracked().as_deref() != Some("default") {
                return;
            }
            // Where they last worked, if they may create there (or none is listed);
            // else the first they may create in.
            let last = last_namespace::recall();
            let may_create_in = |n: &str| list.iter().any(|p| p.may_create && p.namespace == n);
            let start = match (last, list.iter().find(|p| p.may_create)) {
                (Some(last), _) if list.is_empty() || may_create_in(&last) => last,
                (_, Some(first)) => first.namespace.clone(),
                (_, None) if list.is_empty() => String::new(),
                (_, None) => return,
            };
            draft.change(|d| d.set_namespace(&start));
        });
    }
    let pick = move |picked: String| {
        draft.change(|d| d.set_namespace(&picked));
        form.touch("metadata.namespace");
    };
    view! {
        <div class="field" data-path="metadata.namespace">
            <label class="field-label" for="f-metadata-namespace">{if for_people { "Namespace" } else { "namespace" }}</label>
            <Transition>
                {move || match places.get() {
                    Some(Ok(list)) if !list.is_empty() => {
                        let chosen = namespace.get().unwrap_or_default();
                        let (open, closed): (Vec<StackPlace>, Vec<StackPlace>) =
                            list.into_iter().partition(|p| p.may_create);
                        let option = |p: StackPlace, allowed: bool| {
                            let selected = p.namespace == chosen;
                            view! { <option value=p.namespace.clone() selected=selected disabled=!allowed>{p.namespace.clone()}</option> }
                        };
                        let none_open = open.is_empty();
                        view! {
                            <select id="f-metadata-namespace" on:change:target=move |ev| pick(ev.target().value())>
                                {if for_people {
                                    view! {
                                        <optgroup label="Where you may create a Stack">
                                            {open.into_iter().map(|p| option(p, true)).collect_view()}
                                        </optgroup>
                                        {(!closed.is_empty()).then(|| view! {
                                            <optgroup label="Where you may not">
                                                {closed.into_iter().map(|p| option(p, false)).collect_view()}
                                            </optgroup>
                                        })}
                                    }.into_any()
                                } else {
                                    open.into_iter().map(|p| option(p, true)).collect_view().into_any()
                                }}
                            </select>
                            {(for_people && none_open).then(|| view! {
                                <p class="field-hint" data-testid="no-place">"You may not create a Stack in any namespace you can list: ask your platform team for one."</p>
                            })}
                        }.into_any()
                    }
                    _ => view! {
                        <input id="f-metadata-namespace" type="text" data-testid="namespace-typed"
                            placeholder="your namespace"
                            prop:value=move || namespace.get().unwrap_or_default()
                            on:input:target=move |ev| pick(ev.target().value())/>
                        <p class="field-hint">"Your access does not list namespaces: type the one to create in."</p>
                    }.into_any(),
                }}
            </Transition>
            {move || form.shown_errors("metadata.namespace").into_iter().map(|message| view! {
                <p class="field-error" role="alert">{message}</p>
            }).collect_view()}
        </div>
    }
}
