//! Binding a Stack from its page: pick one of the namespace's workloads (those the
//! person may bind first, the others saying why not), see the variables it will get,
//! and bind. The binding is named for the person; the generic StackBinding form stays
//! one click away for a prefix or anything else.

use leptos::prelude::*;
use serde_json::json;

use crate::api::{bind_workload, fetch_binding_offer};
use crate::components::error_banner::ErrorBanner;
use portico_core::encode::percent_encode;
use portico_core::payload::{BindingOffer, BindingTarget, SubmitOutcome};
use portico_core::portico_kinds;

/// The name a binding of `stack` into `workload` gets: both names, within a binding
/// name's 52 characters (the workload's cut first).
pub fn binding_name(workload: &str, stack: &str) -> String {
    let workload = workload.replace('.', "-");
    // A binding's name starts with a letter; a workload's may not.
    let workload = if workload.starts_with(|c: char| c.is_ascii_lowercase()) {
        workload
    } else {
        format!("to-{workload}")
    };
    let room = 52usize.saturating_sub(stack.len() + 1);
    let workload: String = workload.chars().take(room).collect();
    match workload.trim_end_matches('-') {
        // A Stack's name leaves no room (51 or 52 characters): its own is a binding's.
        "" => stack.to_string(),
        workload => format!("{workload}-{stack}"),
    }
}

/// Portico's page for the workload a binding names.
pub fn workload_href(namespace: &str, kind: &str, name: &str) -> Option<String> {
    portico_kinds::binding_cell_path("Workload", name, kind, Some(namespace))
        .map(|path| crate::base::url(&path))
}

/// What the picker shows and what was chosen: kept by the object's page, whose parts
/// are drawn again with every change of the Stack (a status update would otherwise
/// close the picker under the person's hand).
#[derive(Clone, Copy)]
pub struct PickerState {
    open: RwSignal<bool>,
    chosen: RwSignal<Option<(String, String)>>,
    bound: RwSignal<Option<String>>,
}

impl PickerState {
    fn new() -> Self {
        Self {
            open: RwSignal::new(false),
            chosen: RwSignal::new(None),
            bound: RwSignal::new(None),
        }
    }

    /// Keeps the picker's state for every part of this page drawn below.
    pub fn provide() {
        provide_context(Self::new());
    }
}

#[component]
pub fn BindPicker(namespace: String, stack: String) -> impl IntoView {
    let PickerState {
        open,
        chosen,
        bound,
    } = use_context::<PickerState>().unwrap_or_else(PickerState::new);
    let target = StoredValue::new((namespace.clone(), stack.clone()));
    let offer = Resource::new(
        move || open.get(),
        move |open| {
            let (namespace, stack) = target.get_value();
            async move {
                if open {
                    Some(fetch_binding_offer(namespace, stack).await)
                } else {
                    None
                }
            }
        },
    );
    let refusal = RwSignal::new(None::<String>);
    let bind = Action::new(move |(kind, name): &(String, String)| {
        let (namespace, stack) = target.get_value();
        let object = binding_object(&namespace, &stack, kind, name);
        async move {
            match bind_workload(object).await {
                Ok(SubmitOutcome::Accepted { name, .. }) => {
                    refusal.set(None);
                    bound.set(Some(name));
                    open.set(false);
                    chosen.set(None);
                }
                Ok(SubmitOutcome::Rejected(r)) => refusal.set(Some(r.message)),
                Err(e) => refusal.set(Some(e.to_string())),
            }
        }
    });
    let all_fields = crate::base::url(&format!(
        "{}/new?ns={}&spec.stack={}",
        portico_kinds::bindings().page_path(),
        percent_encode(&namespace),
        percent_encode(&stack)
    ));
    let binding_href = {
        let namespace = namespace.clone();
        move |name: &str| {
            crate::base::url(&portico_kinds::bindings().object_path(Some(&namespace), name))
        }
    };
    let done_href = binding_href.clone();
    view! {
        <button type="button" class="button" data-testid="bind-link"
            aria-expanded=move || open.get().to_string()
            on:click=move |_| { refusal.set(None); open.update(|o| *o = !*o); }>"Bind to a workload…"</button>
        {move || bound.get().map(|name| view! {
            <p class="success-note" data-testid="bind-done">"Bound: "<a href=done_href(&name)>{name.clone()}</a>
                " — the workload gets the variables when the reconciler has written them (its Pods restart)."</p>
        })}
        <div class="bind-picker" class:hidden-panel=move || !open.get() data-testid="bind-picker">
            <Transition fallback=|| view! { <p class="subtle small">"Looking for workloads…"</p> }>
                {move || offer.get().flatten().map(|result| match result {
                    Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
                    Ok(offer) => {
                        let namespace = target.get_value().0;
                        offer_view(offer, &namespace, chosen, binding_href.clone()).into_any()
                    }
                })}
            </Transition>
            {move || chosen.get().map(|(kind, name)| binding_name_note(kind, name, target.get_value().1))}
            {move || refusal.get().map(|why| view! { <p class="field-error" role="alert" data-testid="bind-refused">{why}</p> })}
            <div class="form-actions">
                <button type="button" class="primary" data-testid="bind-confirm"
                    disabled=move || chosen.with(Option::is_none) || bind.pending().get()
                    on:click=move |_| { if let Some(choice) = chosen.get_untracked() { bind.dispatch(choice); } }>
                    {move || if bind.pending().get() { "Binding…" } else { "Bind" }}
                </button>
                <button type="button" class="button" data-testid="bind-cancel"
                    on:click=move |_| { open.set(false); chosen.set(None); refusal.set(None); }>"Cancel"</button>
                <a class="subtle small" href=all_fields data-testid="bind-all-fields">"All fields (a prefix, a container)…"</a>
            </div>
        </div>
    }
}

/// The StackBinding that binds `stack` into workload `kind`/`name`, named for both.
fn binding_object(namespace: &str, stack: &str, kind: &str, name: &str) -> serde_json::Value {
    json!({
        "apiVersion": portico_kinds::bindings().api_version(),
        "kind": "StackBinding",
        "metadata": {"name": binding_name(name, stack), "namespace": namespace},
        "spec": {"stack": stack, "workload": {"kind": kind, "name": name}},
    })
}

/// What the server offers to bind in `namespace`: why nothing can be bound yet, if so;
/// the workloads to choose from (or that there are none); the variables a bound one gets.
fn offer_view(
    offer: BindingOffer,
    namespace: &str,
    chosen: RwSignal<Option<(String, String)>>,
    binding_href: impl Fn(&str) -> String + Clone,
) -> impl IntoView {
    let none = offer.targets.is_empty();
    view! {
        {offer.blocked.clone().map(|why| view! { <p class="field-error" data-testid="bind-blocked">{why}</p> })}
        <fieldset class="bind-targets">
            <legend>"Which workload gets the details"</legend>
            {none.then(|| view! {
                <p class="subtle small" data-testid="bind-none">{format!(
                    "No Deployment, StatefulSet or other Stack in {namespace} yet: create the app first, then bind it here."
                )}</p>
            })}
            {offer.targets.into_iter().map(|t| target_row(t, namespace, chosen, binding_href.clone())).collect_view()}
        </fieldset>
        {(!offer.variables.is_empty()).then(|| view! {
            <p class="subtle small">"It gets these environment variables (its Pods restart to read them):"</p>
            <table class="bind-variables" data-testid="bind-variables">
                <tbody>
                    {offer.variables.into_iter().map(|(name, holds)| view! {
                        <tr><td class="mono">{name}</td><td class="mono">{holds}</td></tr>
                    }).collect_view()}
                </tbody>
            </table>
        })}
    }
}

/// What the chosen workload's binding will be called; someone's own workload is
/// marked first as accepting the variables (without it the reconciler may write none
/// there), and the note says so.
fn binding_name_note(kind: String, name: String, stack: String) -> impl IntoView {
    let accepts = (kind != "Stack").then(|| view! {
        " "{kind.clone()}" "<span class="mono">{name.clone()}</span>" is marked, as you, as accepting them (its annotation "
        <span class="mono">"portico.dev/binding-prefixes"</span>")."
    });
    view! { <p class="subtle small" data-testid="bind-name">"The binding will be called "<span class="mono">{binding_name(&name, &stack)}</span>"."{accepts}</p> }
}

/// One workload the picker offers: chosen with a radio, or said why not.
fn target_row(
    t: BindingTarget,
    namespace: &str,
    chosen: RwSignal<Option<(String, String)>>,
    binding_href: impl Fn(&str) -> String,
) -> impl IntoView {
    let value = (t.kind.clone(), t.name.clone());
    let id = format!("bind-{}-{}", t.kind.to_lowercase(), t.name);
    let disabled = t.refused.is_some() || t.bound_by.is_some();
    let is_chosen = {
        let value = value.clone();
        move || chosen.with(|c| c.as_ref() == Some(&value))
    };
    let label = format!("{} {}", t.kind, t.name);
    let href = workload_href(namespace, &t.kind, &t.name);
    view! {
        <div class="bind-target" class:refused=disabled data-target=label.clone()>
            <input type="radio" name="bind-target" id=id.clone() disabled=disabled
                prop:checked=is_chosen
                on:change=move |_| chosen.set(Some(value.clone()))/>
            <label for=id>{t.kind.clone()}" "<span class="mono">{t.name.clone()}</span></label>
            {href.map(|href| view! { " "<a class="small" href=href title="Open it">"open"</a> })}
            {t.bound_by.map(|b| view! { <span class="subtle small">" — already bound by "<a href=binding_href(&b)>{b.clone()}</a></span> })}
            {t.refused.map(|why| view! { <span class="subtle small">{format!(" — {why}")}</span> })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_is_named_for_both_within_52_characters() {
        assert_eq!(binding_name("app", "db"), "app-db");
        let long = binding_name(&"w".repeat(60), "db");
        assert_eq!(long.len(), 52);
        assert!(long.ends_with("-db"));
        assert_eq!(binding_name("web.v2", "db"), "web-v2-db");
        assert_eq!(binding_name("9app", "db"), "to-9app-db");
        // A Stack name that leaves no room for the workload's.
        let longest = "s".repeat(52);
        assert_eq!(binding_name("app", &longest), longest);
        assert_eq!(binding_name("9app", &"s".repeat(51)), "s".repeat(51));
    }
}
