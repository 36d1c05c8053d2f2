//! A Stack's version and plan, changed from its page: pick, see the difference in its
//! workload (or why the change is refused) before anything is written, then apply.
//! The page then follows the rollout live, as it follows every change of the Stack.

use leptos::prelude::*;

use crate::api::{change_stack, preview_stack_change};
use crate::components::error_banner::ErrorBanner;
use portico_core::payload::DiffLine;

/// The version and plan picked and not yet applied: kept by the object's page, whose
/// parts are drawn again with every change of the Stack (a rollout's status updates
/// would otherwise drop a pick while it is being looked at).
#[derive(Clone, Copy)]
pub struct ChangeState {
    version: RwSignal<Option<String>>,
    plan: RwSignal<Option<String>>,
}

impl ChangeState {
    fn new() -> Self {
        Self {
            version: RwSignal::new(None),
            plan: RwSignal::new(None),
        }
    }

    /// Keeps the picks for every part of this page drawn below.
    pub fn provide() {
        provide_context(Self::new());
    }
}

#[component]
pub fn StackChange(namespace: String, name: String) -> impl IntoView {
    let ChangeState { version, plan } =
        use_context::<ChangeState>().unwrap_or_else(ChangeState::new);
    let target = StoredValue::new((namespace, name));
    let preview = Resource::new(
        move || (version.get(), plan.get()),
        move |(version, plan)| {
            let (namespace, name) = target.get_value();
            preview_stack_change(namespace, name, version, plan)
        },
    );
    let outcome = RwSignal::new(None::<String>);
    let apply = Action::new(move |_: &()| async move {
        let (namespace, name) = target.get_value();
        let result = change_stack(
            namespace,
            name,
            version.get_untracked(),
            plan.get_untracked(),
        )
        .await;
        // Applied: the Stack's page redraws itself from the changed Stack.
        outcome.set(result.err().map(|e| e.to_string()));
    });
    view! {
        <section class="panel" data-testid="stack-change">
            <h2>"Version and plan"</h2>
            <Transition fallback=|| view! { <p class="subtle small">"Reading the catalog…"</p> }>
                {move || preview.get().map(|result| match result {
                    Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
                    Ok(p) => {
                        let chosen_version = version.get_untracked().or(p.version.clone());
                        let chosen_plan = plan.get_untracked().or(p.plan.clone());
                        let running = p.running.clone();
                        let has_diff = !p.diff.is_empty();
                        let refused = p.refused.clone();
                        view! {
                            <div class="change-controls">
                                <label class="control">"Version"
                                    <select data-testid="change-version" on:change:target=move |ev| version.set(Some(ev.target().value()))>
                                        {p.versions.iter().map(|v| {
                                            let label = if running.as_deref() == Some(v.as_str()) { format!("{v} (running)") } else { v.clone() };
                                            view! { <option value=v.clone() selected=chosen_version.as_deref() == Some(v.as_str())>{label}</option> }
                                        }).collect_view()}
                                    </select>
                                </label>
                                {(!p.plans.is_empty()).then(|| view! {
                                    <label class="control">"Plan"
                                        <select data-testid="change-plan" on:change:target=move |ev| plan.set(Some(ev.target().value()))>
                                            {p.plans.iter().map(|name| view! {
                                                <option value=name.clone() selected=chosen_plan.as_deref() == Some(name.as_str())>{name.clone()}</option>
                                            }).collect_view()}
                                        </select>
                                    </label>
                                })}
                            </div>
                            {refused.map(|why| view! { <p class="field-error" data-testid="change-refused">{why}</p> })}
                            {(has_diff && p.refused.is_none()).then(|| view! {
                                <p class="subtle small">"What the reconciler will change in the workload (checked with a dry run; its Pods then roll one at a time):"</p>
                                <Diff lines=p.diff.clone()/>
                                <p class="field-hint" data-testid="change-effect">
                                    "Each Pod restarts with the change: a Stack with one replica cannot be reached until its Pod is ready again. Its volumes, and the data on them, stay as they are."
                                </p>
                                <div class="form-actions">
                                    <button type="button" class="button primary" data-testid="change-apply"
                                        disabled=move || apply.pending().get()
                                        on:click=move |_| { apply.dispatch(()); }>"Apply"</button>
                                    <button type="button" class="button" data-testid="change-cancel"
                                        on:click=move |_| { version.set(None); plan.set(None); outcome.set(None); }>"Cancel"</button>
                                </div>
                            })}
                        }.into_any()
                    }
                })}
            </Transition>
            {move || outcome.get().map(|e| view! { <p class="field-error" data-testid="change-outcome">{e}</p> })}
        </section>
    }
}

#[component]
fn Diff(lines: Vec<DiffLine>) -> impl IntoView {
    view! {
        <pre class="diff" data-testid="change-diff">
            {lines.into_iter().map(|l| {
                let class = match l.tag {
                    '+' => "diff-line add",
                    '-' => "diff-line del",
                    '…' => "diff-line skip",
                    _ => "diff-line",
                };
                let text = if l.tag == '…' { "…".to_string() } else { format!("{}{}", l.tag, l.text) };
                view! { <span class=class>{text}</span> }
            }).collect_view()}
        </pre>
    }
}
