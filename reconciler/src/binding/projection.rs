//! What a binding puts into its workload, computed from the bound Stack's status: pure,
//! so the same Stack gives the same variables every time.
//!
//! The variables follow servicebinding.io's well-known entries (host, port, database,
//! username, password, uri, type, provider) as `PREFIX_NAME`. The password is a
//! reference to the Stack's own credentials Secret, never a copy: the reconciler cannot
//! read Secrets, a Pod reads only its own namespace's (so a binding's Stack is in the
//! binding's namespace), and unbinding leaves no copy behind. The URL is put together
//! by the kubelet from the other variables (`$(PREFIX_PASSWORD)`), so it holds the
//! password without the reconciler ever knowing it.

use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, SecretKeySelector};
use serde_json::{Value, json};

use super::kind::{StackBinding, WorkloadKind};
use crate::desired::{PASSWORD_KEY, secret_name};
use crate::stack::Stack;

/// Held on a binding until its variables are out of the workload again.
pub const FINALIZER: &str = "portico.dev/unbind";

/// The field manager of one binding's variables: its own, so that unbinding (an empty
/// apply with it) removes exactly what it added, and two bindings never collide.
pub fn manager(binding: &str) -> String {
    format!("portico-binding.{binding}")
}

/// Why a binding cannot be carried out yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotYet {
    #[error("Stack {0} does not exist in this namespace")]
    NoStack(String),
    #[error("Stack {0} has no endpoint yet: it is still being provisioned")]
    NoEndpoint(String),
}

/// A Stack's connection details, as its status says them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Details {
    pub choice: String,
    pub host: String,
    pub port: i32,
    pub database: Option<String>,
    pub username: Option<String>,
    pub scheme: Option<String>,
    /// The credentials Secret holding the password, when the choice has one.
    pub credentials: Option<String>,
}

pub fn details(stack: &Stack) -> Result<Details, NotYet> {
    let name = stack.metadata.name.clone().unwrap_or_default();
    let namespace = stack.metadata.namespace.clone().unwrap_or_default();
    let status = stack.status.as_ref();
    let endpoint = status
        .and_then(|s| s.endpoint.as_ref())
        .ok_or_else(|| NotYet::NoEndpoint(name.clone()))?;
    Ok(Details {
        choice: stack.spec.choice.clone(),
        host: format!("{}.{namespace}.svc", endpoint.service),
        port: endpoint.port,
        database: endpoint.database.clone(),
        username: endpoint.user.clone(),
        scheme: endpoint.scheme.clone(),
        credentials: status
            .and_then(|s| s.credentials_secret.clone())
            .map(|_| secret_name(&name)),
    })
}

/// `spec.envPrefix`, else the Stack's choice in capitals with `_` (`MYSQL_`).
pub fn prefix(binding: &StackBinding, choice: &str) -> String {
    match binding.spec.env_prefix.as_deref().filter(|p| !p.is_empty()) {
        Some(prefix) => prefix.to_string(),
        None => default_prefix(choice),
    }
}

/// The prefix of a binding that names none: the choice in capitals with `_`.
pub fn default_prefix(choice: &str) -> String {
    let mut prefix: String = choice
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if prefix.starts_with(|c: char| c.is_ascii_digit()) {
        prefix.insert(0, '_');
    }
    prefix.push('_');
    prefix
}

/// The annotation on a workload listing the prefixes its owner accepts a binding's
/// variables under (`MYSQL_,CACHE_`). Written by someone who may change the workload
/// (Portico's Bind button, as the person), never by the reconciler, whose admission
/// policy lets a binding add variables only under these prefixes: the reconciler's
/// account alone cannot put a variable into a workload nobody offered.
pub const ACCEPTED_PREFIXES: &str = "portico.dev/binding-prefixes";

/// The annotation's value on a workload, as read from its metadata.
pub fn acceptance(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(ACCEPTED_PREFIXES))
        .cloned()
}

/// The prefixes `value` (the annotation's) lists, as admission reads them.
fn accepted(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|p| !p.is_empty())
}

/// Whether a workload annotated `value` accepts variables under `prefix`.
pub fn accepts(value: Option<&str>, prefix: &str) -> bool {
    value.is_some_and(|v| accepted(v).any(|p| p == prefix))
}

/// The annotation's value once `prefix` is accepted too; `None` when it already is.
pub fn accepting(value: Option<&str>, prefix: &str) -> Option<String> {
    if accepts(value, prefix) {
        return None;
    }
    let mut prefixes: Vec<&str> = value.map(|v| accepted(v).collect()).unwrap_or_default();
    prefixes.push(prefix);
    Some(prefixes.join(","))
}

/// The annotation's value without `prefix` (`None`: nothing left to accept).
pub fn without(value: Option<&str>, prefix: &str) -> Option<String> {
    let left: Vec<&str> = value
        .map(|v| accepted(v).filter(|p| *p != prefix).collect())
        .unwrap_or_default();
    (!left.is_empty()).then(|| left.join(","))
}

fn plain(name: String, value: String) -> EnvVar {
    EnvVar {
        name,
        value: Some(value),
        value_from: None,
    }
}

/// The variables, in the order the kubelet must define them: the URL last, after the
/// ones it refers to.
pub fn variables(prefix: &str, details: &Details) -> Vec<EnvVar> {
    let var = |name: &str| format!("{prefix}{name}");
    let mut env = vec![
        plain(var("TYPE"), details.choice.clone()),
        plain(var("PROVIDER"), "portico".into()),
        plain(var("HOST"), details.host.clone()),
        plain(var("PORT"), details.port.to_string()),
    ];
    if let Some(database) = &details.database {
        env.push(plain(var("DATABASE"), database.clone()));
    }
    if let Some(username) = &details.username {
        env.push(plain(var("USERNAME"), username.clone()));
    }
    if let Some(secret) = &details.credentials {
        env.push(EnvVar {
            name: var("PASSWORD"),
            value: None,
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret.clone(),
                    key: PASSWORD_KEY.into(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
        });
    }
    if let Some(scheme) = &details.scheme {
        let login = match (&details.username, &details.credentials) {
            (Some(_), Some(_)) => format!("$({}):$({})@", var("USERNAME"), var("PASSWORD")),
            (Some(_), None) => format!("$({})@", var("USERNAME")),
            _ => String::new(),
        };
        let path = details
            .database
            .as_ref()
            .map(|_| format!("$({})", var("DATABASE")))
            .unwrap_or_default();
        env.push(plain(
            var("URL"),
            format!(
                "{scheme}://{login}$({}):$({})/{path}",
                var("HOST"),
                var("PORT")
            ),
        ));
    }
    env
}

/// A workload the variables go into: its API version, kind and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: String,
}

impl Target {
    /// `Deployment/app`, as the binding's status records it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.kind, self.name)
    }

    pub fn parse(label: &str) -> Option<Target> {
        let (kind, name) = label.split_once('/')?;
        let kind = match kind {
            "Deployment" => "Deployment",
            "StatefulSet" => "StatefulSet",
            _ => return None,
        };
        Some(Target {
            api_version: "apps/v1",
            kind,
            name: name.to_string(),
        })
    }

    /// The workload a binding names; a Stack's is its own Deployment or StatefulSet
    /// (`stateful` says which, from the catalog).
    pub fn of(kind: WorkloadKind, name: &str, stateful: bool) -> Target {
        let kind = match kind {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::Stack if stateful => "StatefulSet",
            WorkloadKind::Stack => "Deployment",
        };
        Target {
            api_version: "apps/v1",
            kind,
            name: name.to_string(),
        }
    }
}

/// The server-side apply body that puts `env` into every container named.
pub fn bind(target: &Target, containers: &[String], env: &[EnvVar]) -> Value {
    let containers: Vec<Value> = containers
        .iter()
        .map(|name| json!({"name": name, "env": env}))
        .collect();
    json!({
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": {"name": target.name},
        "spec": {"template": {"spec": {"containers": containers}}},
    })
}

/// The apply body that owns nothing: sent with a binding's manager, it removes every
/// field only that binding set.
pub fn unbind(target: &Target) -> Value {
    json!({
        "apiVersion": target.api_version,
        "kind": target.kind,
        "metadata": {"name": target.name},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::{Endpoint, StackStatus};

    fn mysql() -> Stack {
        let mut stack = Stack::new("db", Default::default());
        stack.metadata.namespace = Some("team".into());
        stack.spec.choice = "mysql".into();
        stack.status = Some(StackStatus {
            credentials_secret: Some("db-credentials".into()),
            endpoint: Some(Endpoint {
                service: "db".into(),
                port: 3306,
                node_port: None,
                user: Some("app".into()),
                admin_user: Some("root".into()),
                database: Some("app".into()),
                scheme: Some("mysql".into()),
            }),
            ..Default::default()
        });
        stack
    }

    fn names(env: &[EnvVar]) -> Vec<&str> {
        env.iter().map(|e| e.name.as_str()).collect()
    }

    #[test]
    fn mysql_gets_every_detail_the_password_by_reference_and_the_url_last() {
        let details = details(&mysql()).expect("details");
        let env = variables("MYSQL_", &details);
        assert_eq!(
            names(&env),
            [
                "MYSQL_TYPE",
                "MYSQL_PROVIDER",
                "MYSQL_HOST",
                "MYSQL_PORT",
                "MYSQL_DATABASE",
                "MYSQL_USERNAME",
                "MYSQL_PASSWORD",
                "MYSQL_URL"
            ]
        );
        let password = env
            .iter()
            .find(|e| e.name == "MYSQL_PASSWORD")
            .expect("password");
        assert_eq!(password.value, None, "never a copy");
        let from = password
            .value_from
            .as_ref()
            .and_then(|f| f.secret_key_ref.as_ref())
            .expect("a Secret reference");
        assert_eq!(
            (from.name.as_str(), from.key.as_str()),
            ("db-credentials", "app-password"),
            "the app user's, never root's"
        );
        assert_eq!(
            env.last().and_then(|e| e.value.as_deref()),
            Some(
                "mysql://$(MYSQL_USERNAME):$(MYSQL_PASSWORD)@$(MYSQL_HOST):$(MYSQL_PORT)/$(MYSQL_DATABASE)"
            )
        );
        let host = env.iter().find(|e| e.name == "MYSQL_HOST").expect("host");
        assert_eq!(host.value.as_deref(), Some("db.team.svc"));
    }

    #[test]
    fn tomcat_gets_no_credentials_and_a_plain_url() {
        let mut stack = mysql();
        stack.spec.choice = "tomcat".into();
        if let Some(status) = stack.status.as_mut() {
            status.credentials_secret = None;
            status.endpoint = Some(Endpoint {
                service: "web".into(),
                port: 8080,
                node_port: None,
                user: None,
                admin_user: None,
                database: None,
                scheme: Some("http".into()),
            });
        }
        let env = variables("WEB_", &details(&stack).expect("details"));
        assert_eq!(
            names(&env),
            [
                "WEB_TYPE",
                "WEB_PROVIDER",
                "WEB_HOST",
                "WEB_PORT",
                "WEB_URL"
            ]
        );
        assert_eq!(
            env.last().and_then(|e| e.value.as_deref()),
            Some("http://$(WEB_HOST):$(WEB_PORT)/")
        );
    }

    #[test]
    fn a_stack_without_an_endpoint_is_not_bound_yet() {
        let mut stack = mysql();
        stack.status = None;
        assert_eq!(details(&stack), Err(NotYet::NoEndpoint("db".into())));
    }

    #[test]
    fn the_prefix_is_the_bindings_or_the_choice_in_capitals() {
        let mut binding = StackBinding::new("b", Default::default());
        assert_eq!(prefix(&binding, "mysql"), "MYSQL_");
        assert_eq!(prefix(&binding, "my-sql.8"), "MY_SQL_8_");
        assert_eq!(prefix(&binding, "9db"), "_9DB_");
        binding.spec.env_prefix = Some("DB_".into());
        assert_eq!(prefix(&binding, "mysql"), "DB_");
    }

    #[test]
    fn a_workload_accepts_exactly_the_prefixes_its_annotation_lists() {
        assert!(!accepts(None, "MYSQL_"));
        assert!(!accepts(Some(""), "MYSQL_"));
        assert!(accepts(Some("MYSQL_"), "MYSQL_"));
        assert!(accepts(Some(" CACHE_ , MYSQL_ "), "MYSQL_"));
        assert!(!accepts(Some("MYSQL"), "MYSQL_"), "a prefix is whole");
        assert!(!accepts(Some("MYSQL_X_"), "MYSQL_"));
        assert_eq!(accepting(None, "MYSQL_").as_deref(), Some("MYSQL_"));
        assert_eq!(
            accepting(Some("CACHE_,"), "MYSQL_").as_deref(),
            Some("CACHE_,MYSQL_")
        );
        assert_eq!(accepting(Some("CACHE_, MYSQL_"), "MYSQL_"), None);
        assert_eq!(
            without(Some("CACHE_,MYSQL_"), "MYSQL_").as_deref(),
            Some("CACHE_")
        );
        assert_eq!(without(Some("MYSQL_"), "MYSQL_"), None);
    }

    #[test]
    fn targets_are_recorded_and_read_back_and_a_stack_is_its_workload() {
        let target = Target::of(WorkloadKind::Stack, "db", true);
        assert_eq!(target.label(), "StatefulSet/db");
        assert_eq!(Target::parse(&target.label()), Some(target));
        assert_eq!(
            Target::of(WorkloadKind::Stack, "web", false).kind,
            "Deployment"
        );
        assert_eq!(Target::parse("Secret/x"), None);
        assert_eq!(Target::parse("nonsense"), None);
        let body = bind(
            &Target::of(WorkloadKind::Deployment, "app", false),
            &["app".into(), "sidecar".into()],
            &[plain("A".into(), "1".into())],
        );
        assert_eq!(
            body["spec"]["template"]["spec"]["containers"][1]["name"],
            "sidecar"
        );
        assert_eq!(
            body["spec"]["template"]["spec"]["containers"][1]["env"][0]["value"],
            "1"
        );
    }
}
