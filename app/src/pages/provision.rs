//! Self-service provisioning: the stack catalog as cards; each leads to the Stack form
//! with its choice filled in. A Stack's page then shows its progress live; the
//! connection panel here is shown there.

use leptos::prelude::*;
use leptos_meta::Title;
use serde_json::Value;

use crate::api::{fetch_kept_volumes, reveal_stack_password, stack_offers};
use crate::components::copy_button::CopyButton;
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
                Ok(list) => {
                    // Kept volumes are reattached by the one choice that keeps data.
                    let stateful: Vec<String> = list.iter().filter(|o| o.stateful).map(|o| o.choice.clone()).collect();
                    let choice = match stateful.as_slice() { [one] => Some(one.clone()), _ => None };
                    view! {
                        <div class="offers">
                            {list.into_iter().map(|o| view! { <OfferCard offer=o/> }).collect_view()}
                        </div>
                        <KeptVolumes choice=choice/>
                    }.into_any()
                }
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}

/// Volumes kept after their Stack was deleted, each with how to reattach it (a Stack
/// of the same name) and how to let it go.
#[component]
fn KeptVolumes(choice: Option<String>) -> impl IntoView {
    let kept = Resource::new(|| (), |_| fetch_kept_volumes());
    view! {
        <Transition fallback=|| ()>
            {move || kept.get().map(|result| match result {
                Ok(list) if list.is_empty() => ().into_any(),
                Ok(list) => view! {
                    <section class="panel" data-testid="kept-volumes">
                        <h2>"Kept data"</h2>
                        <p class="subtle small">"Volumes of deleted Stacks that keep their data (deletionPolicy Retain), with the Secret holding the password that opens them. Provision a Stack of the same name in the same namespace to reattach them."</p>
                        <table class="grid">
                            <thead><tr><th>"Namespace"</th><th>"Volume claim"</th><th>"Stack"</th><th>"Size"</th><th></th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|v| {
                                    let mut href = format!(
                                        "{STACKS_PATH}/new?ns={}&metadata.name={}",
                                        percent_encode(&v.namespace),
                                        percent_encode(&v.stack)
                                    );
                                    if let Some(choice) = &choice {
                                        href.push_str(&format!("&spec.choice={}&spec.storage={}", percent_encode(choice), percent_encode(&v.size)));
                                    }
                                    let forget = format!("kubectl delete pvc,secret -n {} -l portico.dev/stack={}", v.namespace, v.stack);
                                    view! {
                                        <tr data-kept=v.name.clone()>
                                            <td class="mono">{v.namespace.clone()}</td>
                                            <td class="mono">{v.name.clone()}</td>
                                            <td class="mono">{v.stack.clone()}</td>
                                            <td class="mono">{v.size.clone()}</td>
                                            <td class="kept-actions">
                                                <a class="button" href=crate::base::url(&href) data-testid="reattach">"Reattach…"</a>
                                                <details class="small"><summary>"Delete it"</summary><code class="mono copyable">{forget}</code></details>
                                            </td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </section>
                }.into_any(),
                // Someone who may not list claims everywhere sees no kept data; their
                // own Stacks' pages still say what deletion keeps.
                Err(_) => ().into_any(),
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

/// How to reach a Stack: in-cluster host and port, the node port, who and which
/// database, a connection URL and a client command; the password is read on request,
/// with the user's own rights, and never part of the page's HTML.
#[component]
pub fn StackConnection(namespace: String, name: String, status: Value) -> impl IntoView {
    let phase = text_at(&status, "/phase").unwrap_or_else(|| "Pending".into());
    let service = text_at(&status, "/endpoint/service");
    let port = text_at(&status, "/endpoint/port");
    let node_port = text_at(&status, "/endpoint/nodePort");
    let user = text_at(&status, "/endpoint/user");
    let database = text_at(&status, "/endpoint/database");
    let scheme = text_at(&status, "/endpoint/scheme");
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
    let address = host.clone().zip(port.clone());
    let connect = Connect {
        scheme: scheme.clone(),
        user: user.clone(),
        database: database.clone(),
        address: address.clone(),
    };
    // The URL with the password once revealed; without it (`user@host`) before.
    let url = {
        let connect = connect.clone();
        Signal::derive(move || {
            let password = revealed.with(|r| r.as_ref().and_then(|r| r.as_ref().ok()).cloned());
            connect.url(password.as_deref()).unwrap_or_default()
        })
    };
    let has_url = connect.url(None).is_some();
    let command = connect.command();
    view! {
        <section class="panel connection" data-testid="stack-connection">
            <h2>"Connection " <span class=badge data-testid="stack-phase">{phase.clone()}</span></h2>
            <dl class="facts">
                <dt>"Host"</dt><dd class="mono">{host.unwrap_or_else(|| "not yet assigned".into())}</dd>
                <dt>"Port"</dt><dd class="mono">{port.unwrap_or_else(|| "—".into())}</dd>
                {node_port.map(|p| view! { <dt>"Node port"</dt><dd class="mono" data-testid="node-port">{p}</dd> })}
                {user.map(|u| view! { <dt>"User"</dt><dd class="mono" data-testid="stack-user">{u}</dd> })}
                {database.map(|d| view! { <dt>"Database"</dt><dd class="mono" data-testid="stack-database">{d}</dd> })}
                {has_url.then(|| view! {
                    <dt>"URL"</dt>
                    <dd class="copy-row">
                        <code class="mono copyable" data-testid="stack-url">{move || url.get()}</code>
                        <CopyButton text=url testid="copy-url"/>
                    </dd>
                })}
                {command.map(|c| {
                    let text = Signal::stored(c.clone());
                    view! {
                        <dt>"Connect"</dt>
                        <dd class="copy-row">
                            <code class="mono copyable" data-testid="stack-command">{c}</code>
                            <CopyButton text=text testid="copy-command"/>
                        </dd>
                    }
                })}
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

/// What a client needs to reach a Stack, from its status.
#[derive(Debug, Clone, PartialEq)]
struct Connect {
    scheme: Option<String>,
    user: Option<String>,
    database: Option<String>,
    /// Host and port.
    address: Option<(String, String)>,
}

impl Connect {
    /// `scheme://user[:password]@host:port/database`; the password percent-encoded.
    fn url(&self, password: Option<&str>) -> Option<String> {
        let scheme = self.scheme.as_deref()?;
        let (host, port) = self.address.as_ref()?;
        let login = match (&self.user, password) {
            (Some(user), Some(p)) => format!("{}:{}@", percent_encode(user), percent_encode(p)),
            (Some(user), None) => format!("{}@", percent_encode(user)),
            (None, _) => String::new(),
        };
        let path = self
            .database
            .as_deref()
            .map(percent_encode)
            .unwrap_or_default();
        Some(format!("{scheme}://{login}{host}:{port}/{path}"))
    }

    /// A command that connects from inside the cluster; the password is asked for (or
    /// comes from the environment), never written into it.
    fn command(&self) -> Option<String> {
        let (host, port) = self.address.as_ref()?;
        match self.scheme.as_deref()? {
            "mysql" => Some(
                format!(
                    "mysql -h {host} -P {port} -u {} -p {}",
                    self.user.as_deref().unwrap_or("root"),
                    self.database.as_deref().unwrap_or_default()
                )
                .trim_end()
                .to_string(),
            ),
            "http" | "https" => self.url(None).map(|url| format!("curl {url}")),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mysql() -> Connect {
        Connect {
            scheme: Some("mysql".into()),
            user: Some("root".into()),
            database: Some("app".into()),
            address: Some(("db.team.svc.cluster.local".into(), "3306".into())),
        }
    }

    #[test]
    fn a_url_carries_the_password_only_once_revealed_and_encoded() {
        let c = mysql();
        assert_eq!(
            c.url(None).as_deref(),
            Some("mysql://root@db.team.svc.cluster.local:3306/app")
        );
        assert_eq!(
            c.url(Some("p@ss/word")).as_deref(),
            Some("mysql://root:p%40ss%2Fword@db.team.svc.cluster.local:3306/app")
        );
        assert_eq!(
            c.command().as_deref(),
            Some("mysql -h db.team.svc.cluster.local -P 3306 -u root -p app")
        );
    }

    #[test]
    fn http_gets_curl_and_an_unknown_scheme_or_no_service_gets_nothing() {
        let web = Connect {
            scheme: Some("http".into()),
            user: None,
            database: None,
            address: Some(("web.team.svc.cluster.local".into(), "8080".into())),
        };
        assert_eq!(
            web.command().as_deref(),
            Some("curl http://web.team.svc.cluster.local:8080/")
        );
        assert_eq!(
            Connect {
                scheme: None,
                ..mysql()
            }
            .url(None),
            None
        );
        assert_eq!(
            Connect {
                address: None,
                ..mysql()
            }
            .command(),
            None
        );
    }
}
