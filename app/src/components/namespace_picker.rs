//! The namespace a page looks in: picked from those the person may list, else typed
//! (a person with access to some namespaces only has no list to pick from).

use leptos::prelude::*;

/// `names`: the namespaces to offer (`None`: the person may not list them); `ns` the
/// one looked in (`None`: all); `set_ns` changes it.
#[component]
pub fn NamespacePicker(
    names: Signal<Option<Vec<String>>>,
    ns: Signal<Option<String>>,
    set_ns: Callback<Option<String>>,
) -> impl IntoView {
    let picked = move |value: String| set_ns.run(Some(value).filter(|v| !v.trim().is_empty()));
    move || match names.get() {
        Some(names) if !names.is_empty() => view! {
            <select
                aria-label="Namespace"
                on:change:target=move |ev| picked(ev.target().value())
                prop:value=move || ns.get().unwrap_or_default()
            >
                <option value="">"All namespaces"</option>
                {names.into_iter().map(|n| {
                    let selected = ns.get_untracked().as_deref() == Some(n.as_str());
                    view! { <option value=n.clone() selected=selected>{n.clone()}</option> }
                }).collect_view()}
            </select>
        }
        .into_any(),
        _ => view! {
            <input type="text" aria-label="Namespace" placeholder="namespace"
                data-testid="namespace-typed"
                prop:value=move || ns.get().unwrap_or_default()
                on:change:target=move |ev| picked(ev.target().value())/>
        }
        .into_any(),
    }
}

/// A page head's Namespace control: the picker under its label, offering the
/// namespaces of `namespaces` once they arrive.
#[component]
pub fn NamespaceControl(
    namespaces: Resource<Result<Vec<String>, crate::error::BackendError>>,
    ns: Signal<Option<String>>,
    set_ns: Callback<Option<String>>,
) -> impl IntoView {
    view! {
        <label class="control">
            "Namespace"
            <Transition>
                <NamespacePicker names=Signal::derive(move || namespaces.get().and_then(Result::ok)) ns set_ns/>
            </Transition>
        </label>
    }
}
