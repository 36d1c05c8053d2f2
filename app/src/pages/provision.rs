//! Self-service provisioning: the stack catalog as cards; each leads to the Stack form
//! with its choice filled in. A Stack's page then shows its progress live; the
//! connection panel here is shown there.

use leptos::prelude::*;
use leptos_meta::Title;
use serde_json::Value;

use crate::api::{reveal_stack_password, stack_offers};
use crate::components::error_banner::ErrorBanner;
use crate::model::StackOffer;
use crate::table::model::percent_encode;

/// Where Stacks live in Portico's URLs.
pub const STACKS_PATH: &str = "/r/portico.dev/v1alpha1/stacks";

#[component]
pub fn ProvisionPage() -> impl IntoView {
    let offers = Resource::new(|| (), |_| stack_offers());
    view! {
        <Title text="Provision"/>
        <div class="page-head">
            <div>
                <h1>"Provision a stack"</h1>
                <p class="subtle">"Pick what you need; Portico's reconciler creates it in your namespace and keeps it as you asked."</p>
            </div>
            <a class="button" href=crate::base::url(STACKS_PATH)>"Your stacks"</a>
        </div>
        <Transition fallback=|| view! { <p class="empty">"Loading the catalog…"</p> }>
            {move || offers.get().map(|result| match result {
                Ok(list) => view! {
                    <div class="offers">
                        {list.into_iter().map(|o| view! { <OfferCard offer=o/> }).collect_view()}
                    </div>
                }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}

#[component]
fn OfferCard(offer: StackOffer) -> impl IntoView {
    let href = format!(
        "{STACKS_PATH}/new?spec.choice={}",
        percent_encode(&offer.choice)
    );
    let versions = offer.versions.join(", ");
    view! {
        <article class="offer panel" data-choice=offer.choice.clone()>
            <h2>{offer.title.clone()}</h2>
            <p>{offer.description.clone()}</p>
            <dl class="facts">
                <dt>"Image"</dt><dd class="mono">{offer.image.clone()}</dd>
                <dt>"Versions"</dt><dd class="mono">{versions}</dd>
                <dt>"Port"</dt><dd class="mono">{offer.port}</dd>
                <dt>"Storage"</dt><dd>{if offer.stateful { "persistent volume per replica" } else { "none" }}</dd>
            </dl>
            <a class="button primary" href=crate::base::url(&href)>{format!("Provision {}", offer.title)}</a>
        </article>
    }
}

fn text_at(status: &Value, pointer: &str) -> Option<String> {
    status.pointer(pointer).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// How to reach a Stack: in-cluster host and port, the node port, and its password
/// (read on request, with the user's own rights; never part of the page's HTML).
#[component]
pub fn StackConnection(namespace: String, name: String, status: Value) -> impl IntoView {
    let phase = text_at(&status, "/phase").unwrap_or_else(|| "Pending".into());
    let service = text_at(&status, "/endpoint/service");
    let port = text_at(&status, "/endpoint/port");
    let node_port = text_at(&status, "/endpoint/nodePort");
    let user = text_at(&status, "/endpoint/user");
    let secret = text_at(&status, "/credentialsSecret");
    let host = service
        .as_ref()
        .map(|s| format!("{s}.{namespace}.svc.cluster.local"));
    let badge = match phase.as_str() {
        "Ready" => "badge ok",
        "Degraded" => "badge problem",
        _ => "badge pending",
    };
    let revealed = RwSignal::new(None::<Result<String, String>>);
    let reveal = {
        let (namespace, name) = (namespace.clone(), name.clone());
        Action::new(move |_: &()| {
            let (namespace, name) = (namespace.clone(), name.clone());
            async move {
                let result = reveal_stack_password(namespace, name)
                    .await
                    .map_err(|e| e.to_string());
                revealed.set(Some(result));
            }
        })
    };
    let kubectl = secret.as_ref().map(|s| {
        format!(
            "kubectl get secret {s} -n {namespace} -o jsonpath='{{.data.password}}' | base64 -d"
        )
    });
    view! {
        <section class="panel connection" data-testid="stack-connection">
            <h2>"Connection " <span class=badge data-testid="stack-phase">{phase.clone()}</span></h2>
            <dl class="facts">
                <dt>"Host"</dt><dd class="mono">{host.unwrap_or_else(|| "not yet assigned".into())}</dd>
                <dt>"Port"</dt><dd class="mono">{port.unwrap_or_else(|| "—".into())}</dd>
                {node_port.map(|p| view! { <dt>"Node port"</dt><dd class="mono" data-testid="node-port">{p}</dd> })}
                {user.map(|u| view! { <dt>"User"</dt><dd class="mono" data-testid="stack-user">{u}</dd> })}
                {kubectl.map(|k| view! {
                    <dt>"Password"</dt>
                    <dd>
                        <code class="mono copyable">{k}</code>
                        <div class="reveal">
                            {move || match revealed.get() {
                                None => view! {
                                    <button type="button" class="small-btn" data-testid="reveal-password"
                                        on:click=move |_| { reveal.dispatch(()); }>"Show password"</button>
                                }.into_any(),
                                Some(Ok(p)) => view! { <code class="mono secret" data-testid="password">{p}</code> }.into_any(),
                                Some(Err(e)) => view! { <span class="field-error" data-testid="password-error">{e}</span> }.into_any(),
                            }}
                        </div>
                    </dd>
                })}
            </dl>
        </section>
    }
}
