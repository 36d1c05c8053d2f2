//! Beside the Stack form: the chosen choice's plans, each with what it means, and its
//! versions, picked with a click rather than typed (the catalog says what exists); on
//! the Provision form, the Stack's other fields in words below them ([`StackFields`]).

use leptos::prelude::*;
use serde_json::Value;

use super::stack_fields::StackFields;
use crate::api::stack_offers;
use portico_core::payload::PlanOffer;

/// What a plan costs per instance: each resource as request–limit, and its volume.
pub fn plan_size(plan: &PlanOffer) -> String {
    let limit = |resource: &str| {
        plan.limits
            .iter()
            .find(|(k, _)| k == resource)
            .map(|(_, v)| v.clone())
    };
    let mut parts: Vec<String> = plan
        .requests
        .iter()
        .map(|(resource, request)| match limit(resource) {
            Some(limit) if &limit != request => format!("{resource} {request}–{limit}"),
            _ => format!("{resource} {request}"),
        })
        .collect();
    parts.extend(
        plan.limits
            .iter()
            .filter(|(k, _)| !plan.requests.iter().any(|(r, _)| r == k))
            .map(|(k, v)| format!("{k} ≤{v}")),
    );
    if let Some(storage) = &plan.storage {
        parts.push(format!("{storage} volume"));
    }
    parts.join(" · ")
}

/// The picker, fetched as a part of its own when a Stack form is hydrated: no other
/// form needs its code (`cargo leptos build --split`). The server renders none of it.
#[lazy]
pub fn stack_picker(
    value: RwSignal<Value>,
    set: Callback<(String, String)>,
    for_people: Signal<bool>,
) -> ViewFn {
    ViewFn::from(move || view! { <StackPicker value=value set=set for_people=for_people/> })
}

/// `value` is the Stack being written; `set` puts `(field path, text)` into it; with
/// `for_people`, the Stack's other fields follow, in words.
#[component]
fn StackPicker(
    value: RwSignal<Value>,
    set: Callback<(String, String)>,
    for_people: Signal<bool>,
) -> impl IntoView {
    let offers = Resource::new(|| (), |_| stack_offers());
    let at = move |pointer: &'static str| {
        Memo::new(move |_| {
            value.with(|v| {
                v.pointer(pointer)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        })
    };
    let (choice, plan, version) = (at("/spec/choice"), at("/spec/plan"), at("/spec/version"));
    view! {
        <Transition fallback=|| ()>
            {move || {
                let list = offers.get().and_then(Result::ok)?;
                let wanted = choice.get()?;
                let offer = list.into_iter().find(|o| o.choice == wanted)?;
                let chosen_plan = plan.get().filter(|p| !p.is_empty()).or(offer.default_plan.clone());
                let chosen_version = version.get().filter(|v| !v.is_empty());
                let plan_storage = (offer.plans.iter())
                    .find(|p| chosen_plan.as_deref() == Some(p.name.as_str()))
                    .and_then(|p| p.storage.clone());
                let fields = offer.clone();
                Some(view! {
                    <section class="panel" data-testid="stack-picker">
                        <h2>{if for_people.get() { "Plan and version".to_string() } else { format!("{}: plan and version", offer.title) }}</h2>
                        <div class="plans picker" role="radiogroup" aria-label="Plan">
                            {offer.plans.iter().map(|p| {
                                let selected = chosen_plan.as_deref() == Some(p.name.as_str());
                                let name = p.name.clone();
                                view! {
                                    <button type="button" class="plan" class:selected=selected role="radio"
                                        aria-checked=selected.to_string() data-plan=p.name.clone()
                                        on:click=move |_| set.run(("spec.plan".into(), name.clone()))>
                                        <span class="plan-name">{p.name.clone()}</span>
                                        <span class="small">{p.description.clone()}</span>
                                        <span class="mono small subtle">{plan_size(p)}</span>
                                    </button>
                                }
                            }).collect_view()}
                        </div>
                        <div class="version-chips" role="radiogroup" aria-label="Version">
                            <span class="subtle small">"Version"</span>
                            {offer.versions.iter().map(|v| {
                                let selected = chosen_version.as_deref() == Some(v.as_str());
                                let picked = v.clone();
                                view! {
                                    <button type="button" class="pill version-chip" class:selected=selected role="radio"
                                        aria-checked=selected.to_string() data-version=v.clone()
                                        on:click=move |_| set.run(("spec.version".into(), picked.clone()))>{v.clone()}</button>
                                }
                            }).collect_view()}
                            {chosen_version.is_none().then(|| view! { <span class="subtle small">"(none picked: the catalog's default)"</span> })}
                        </div>
                    </section>
                    {for_people.get().then(|| view! {
                        <StackFields offer=fields plan_storage=Signal::stored(plan_storage)/>
                    })}
                })
            }}
        </Transition>
    }
}
