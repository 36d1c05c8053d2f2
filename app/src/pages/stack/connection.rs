//! How to reach a Stack: host, port, node port, user, database, a connection URL
//! and a client command; the password read on request, with the person's own rights.

use leptos::prelude::*;
use serde_json::Value;

use crate::api::reveal_stack_password;
use crate::components::copy_button::CopyButton;
use portico_core::encode::percent_encode;

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
    // As a bound app gets it: resolved in any cluster, whatever its domain.
    let host = service.as_ref().map(|s| format!("{s}.{namespace}.svc"));
    let admin_user = text_at(&status, "/endpoint/adminUser");
    let badge = phase_badge(&phase);
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
    let read_key = |key: &str| secret_command(secret.as_deref(), &namespace, key);
    let kubectl = read_key("app-password");
    let admin_kubectl = admin_user.clone().zip(read_key("admin-password"));
    let shown_password = Signal::derive(move || {
        revealed.with(|r| {
            r.as_ref()
                .and_then(|r| r.as_ref().ok())
                .cloned()
                .unwrap_or_default()
        })
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
                {has_url.then(|| url_fact(url))}
                {command.map(command_fact)}
                {kubectl.map(|k| password_fact(k, revealed, reveal, shown_password))}
                {admin_kubectl.map(|(admin, k)| admin_fact(admin, k))}
            </dl>
        </section>
    }
}

/// The badge's class for a Stack's phase.
fn phase_badge(phase: &str) -> &'static str {
    match phase {
        "Ready" => "badge ok",
        "Degraded" => "badge problem",
        _ => "badge pending",
    }
}

/// The kubectl command that prints `key` of the Stack's credentials Secret, if it
/// names one.
fn secret_command(secret: Option<&str>, namespace: &str, key: &str) -> Option<String> {
    secret.map(|s| {
        format!("kubectl get secret {s} -n {namespace} -o jsonpath='{{.data.{key}}}' | base64 -d")
    })
}

/// The connection URL (with the password once revealed), and its copy button.
fn url_fact(url: Signal<String>) -> impl IntoView {
    view! {
        <dt>"URL"</dt>
        <dd class="copy-row">
            <code class="mono copyable" data-testid="stack-url">{move || url.get()}</code>
            <CopyButton text=url testid="copy-url"/>
        </dd>
    }
}

/// The client command that connects from inside the cluster, and its copy button.
fn command_fact(command: String) -> impl IntoView {
    let text = Signal::stored(command.clone());
    view! {
        <dt>"Connect"</dt>
        <dd class="copy-row">
            <code class="mono copyable" data-testid="stack-command">{command}</code>
            <CopyButton text=text testid="copy-command"/>
        </dd>
    }
}

/// How to read the app's password (`kubectl`), and a button that reads it on request
/// with the person's own rights: shown then with a copy and a hide button, or why not.
fn password_fact(
    kubectl: String,
    revealed: RwSignal<Option<Result<String, String>>>,
    reveal: Action<(), ()>,
    shown_password: Signal<String>,
) -> impl IntoView {
    view! {
        <dt>"Password"</dt>
        <dd>
            <code class="mono copyable">{kubectl}</code>
            <div class="reveal">
                {move || match revealed.get() {
                    None => view! {
                        <button type="button" class="small-btn" data-testid="reveal-password"
                            on:click=move |_| { reveal.dispatch(()); }>"Show password"</button>
                    }.into_any(),
                    Some(Ok(p)) => view! {
                        <code class="mono secret" data-testid="password">{p}</code>
                        <CopyButton text=shown_password testid="copy-password"/>
                        <button type="button" class="small-btn" data-testid="hide-password"
                            on:click=move |_| revealed.set(None)>"Hide"</button>
                    }.into_any(),
                    Some(Err(e)) => view! { <span class="field-error" data-testid="password-error">{e}</span> }.into_any(),
                }}
            </div>
        </dd>
    }
}

/// The administrator's name and how to read their password, kept apart from the app's.
fn admin_fact(admin: String, kubectl: String) -> impl IntoView {
    view! {
        <dt>"Administrator"</dt>
        <dd data-testid="stack-admin">
            <p class="field-hint">
                <span class="mono">{admin}</span>
                ", for people administering the server: its password is kept apart, and no binding hands it to an app."
            </p>
            <code class="mono copyable">{kubectl}</code>
        </dd>
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
                    self.user.as_deref().unwrap_or("app"),
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
            user: Some("app".into()),
            database: Some("app".into()),
            address: Some(("db.team.svc".into(), "3306".into())),
        }
    }

    #[test]
    fn a_url_carries_the_password_only_once_revealed_and_encoded() {
        let c = mysql();
        assert_eq!(
            c.url(None).as_deref(),
            Some("mysql://app@db.team.svc:3306/app")
        );
        assert_eq!(
            c.url(Some("p@ss/word")).as_deref(),
            Some("mysql://app:p%40ss%2Fword@db.team.svc:3306/app")
        );
        assert_eq!(
            c.command().as_deref(),
            Some("mysql -h db.team.svc -P 3306 -u app -p app")
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
