//! The server's implementation of the UI's [`Backend`] seam.

use app::backend::{Backend, BackendError};
use app::model::{CrdSummary, FormSpec, ObjectDetail, Permissions, StackOffer, SubmitOutcome};
use app::table::model::{ResourceKind, ResourceRef};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ListParams};

use crate::detail::{self, DetailError};
use crate::discovery::CrdCatalog;
use crate::objects::{self, ObjectError};

pub struct ClusterBackend {
    pub catalog: CrdCatalog,
    pub client: kube::Client,
    /// What the Provision page offers.
    pub stacks: crate::stacks::catalog::LiveCatalog,
    /// For access checks as the caller.
    pub clients: std::sync::Arc<crate::clients::ClientPool>,
    /// Who is acting (audit lines, access checks).
    pub who: crate::identity::Caller,
}

/// Built-in kinds Portico lists beside the CRDs: what its reconciler provisions, plus
/// the Events and Namespaces every page refers to. Secrets are listed through the
/// Table API, which shows key counts, never values.
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
}

const fn builtin(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
) -> Builtin {
    Builtin {
        group,
        version,
        kind,
        plural,
        short_names,
        namespaced,
    }
}

const BUILTIN_KINDS: &[Builtin] = &[
    builtin("apps", "v1", "Deployment", "deployments", &["deploy"], true),
    builtin("apps", "v1", "StatefulSet", "statefulsets", &["sts"], true),
    builtin("", "v1", "Service", "services", &["svc"], true),
    builtin("", "v1", "Pod", "pods", &["po"], true),
    builtin("", "v1", "Secret", "secrets", &[], true),
    builtin("", "v1", "ConfigMap", "configmaps", &["cm"], true),
    builtin("", "v1", "Event", "events", &["ev"], true),
    builtin("", "v1", "Namespace", "namespaces", &["ns"], false),
];

fn builtin_kinds() -> impl Iterator<Item = ResourceKind> {
    BUILTIN_KINDS.iter().map(|b| ResourceKind {
        group: b.group.to_string(),
        kind: b.kind.to_string(),
        plural: b.plural.to_string(),
        short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
        namespaced: b.namespaced,
        versions: vec![b.version.to_string()],
        builtin: true,
    })
}

#[async_trait::async_trait]
impl Backend for ClusterBackend {
    async fn list_crds(&self) -> Result<Vec<CrdSummary>, BackendError> {
        if !self.catalog.is_loaded() {
            return Err(BackendError::NotReady);
        }
        Ok(self.catalog.summaries())
    }

    async fn list_resources(&self) -> Result<Vec<ResourceKind>, BackendError> {
        let crds = self.list_crds().await?;
        let mut kinds: Vec<ResourceKind> = crds
            .into_iter()
            .filter(|c| c.established)
            .map(|c| ResourceKind {
                versions: c.served_versions().map(|v| v.name.clone()).collect(),
                namespaced: c.scope == "Namespaced",
                group: c.group,
                kind: c.kind,
                plural: c.plural,
                short_names: c.short_names,
                builtin: false,
            })
            .filter(|k| !k.versions.is_empty())
            .collect();
        kinds.extend(builtin_kinds());
        Ok(kinds)
    }

    async fn list_namespaces(&self) -> Result<Vec<String>, BackendError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let list = api
            .list_metadata(&ListParams::default())
            .await
            .map_err(|e| BackendError::Unreachable(e.to_string()))?;
        let mut names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect();
        names.sort();
        Ok(names)
    }

    async fn object_detail(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
    ) -> Result<ObjectDetail, BackendError> {
        check_target(&resource, namespace.as_deref(), &name)?;
        detail::object_detail(&self.client, &resource, namespace.as_deref(), &name)
            .await
            .map_err(|e| match e {
                DetailError::NotFound(what) => BackendError::NotFound(what),
                DetailError::Forbidden(what) => BackendError::Forbidden(what),
                DetailError::Api(e) => BackendError::Unreachable(e.to_string()),
            })
    }

    async fn permissions(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
    ) -> Result<Permissions, BackendError> {
        if !resource.is_valid() {
            return Err(BackendError::Invalid("Not a resource name.".into()));
        }
        let ask = |verb: &str| crate::clients::AccessQuestion {
            verb: verb.into(),
            group: resource.group.clone(),
            resource: resource.plural.clone(),
            namespace: namespace.clone(),
        };
        let (create, update, delete) = (ask("create"), ask("update"), ask("delete"));
        let (create, update, delete) = futures::join!(
            self.clients.allowed(&self.who, &create),
            self.clients.allowed(&self.who, &update),
            self.clients.allowed(&self.who, &delete),
        );
        let unreachable = |e: kube::Error| BackendError::Unreachable(e.to_string());
        Ok(Permissions {
            create: create.map_err(unreachable)?,
            update: update.map_err(unreachable)?,
            delete: delete.map_err(unreachable)?,
        })
    }

    fn stack_offers(&self) -> Vec<StackOffer> {
        self.stacks
            .current()
            .entries
            .iter()
            .map(|(choice, e)| StackOffer {
                choice: choice.clone(),
                title: if e.title.is_empty() {
                    choice.clone()
                } else {
                    e.title.clone()
                },
                description: e.description.clone(),
                image: e.image.clone(),
                versions: e.versions.keys().cloned().collect(),
                port: e.port,
                stateful: e.stateful,
            })
            .collect()
    }

    async fn stack_password(
        &self,
        namespace: String,
        name: String,
    ) -> Result<String, BackendError> {
        check_target(&stack_resource(), Some(&namespace), &name)?;
        let secret_name = crate::stacks::children::secret_name(&name);
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &namespace);
        let what = format!("Secret {namespace}/{secret_name}");
        let read = secrets.get(&secret_name).await;
        self.audit(
            "reveal-password",
            &what,
            &read
                .as_ref()
                .map(|_| String::new())
                .map_err(|e| BackendError::Invalid(e.to_string())),
        );
        let secret = read.map_err(|e| match e {
            kube::Error::Api(s) if s.code == 403 => BackendError::Forbidden(what.clone()),
            kube::Error::Api(s) if s.code == 404 => BackendError::NotFound(what.clone()),
            other => BackendError::Unreachable(other.to_string()),
        })?;
        secret
            .data
            .and_then(|d| d.get(crate::stacks::children::PASSWORD_KEY).cloned())
            .and_then(|b| String::from_utf8(b.0).ok())
            .ok_or(BackendError::NotFound(format!("the password in {what}")))
    }

    async fn form_spec(&self, resource: ResourceRef) -> Result<FormSpec, BackendError> {
        self.catalog
            .form_spec(&resource.group, &resource.plural, &resource.version)
            .ok_or_else(|| {
                BackendError::NotFound(format!("{} {}", resource.plural, resource.version))
            })
    }

    async fn submit(
        &self,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError> {
        let obj = dynamic_object(object)?;
        let result = outcome(objects::create(&self.client, &obj, dry_run).await);
        if !dry_run {
            let what = format!(
                "{} {}/{}",
                obj.types
                    .as_ref()
                    .map(|t| t.kind.as_str())
                    .unwrap_or("object"),
                obj.metadata.namespace.as_deref().unwrap_or(""),
                obj.metadata.name.as_deref().unwrap_or("")
            );
            self.audit("create", &what, &result);
        }
        result
    }

    async fn object_for_edit(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
    ) -> Result<serde_json::Value, BackendError> {
        check_target(&resource, namespace.as_deref(), &name)?;
        let mut obj = objects::get(&self.client, &resource, namespace.as_deref(), &name)
            .await
            .map_err(|e| user_error(e, &resource, &name))?;
        if detail::is_secret(&resource) {
            detail::strip_secret_values(&mut obj);
        }
        serde_json::to_value(obj).map_err(|e| BackendError::Invalid(e.to_string()))
    }

    async fn replace(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError> {
        check_target(&resource, namespace.as_deref(), &name)?;
        let mut obj = dynamic_object(object)?;
        if detail::is_secret(&resource) {
            // The form was given the Secret without its values; keep the stored ones.
            let stored = objects::get(&self.client, &resource, namespace.as_deref(), &name)
                .await
                .map_err(|e| user_error(e, &resource, &name))?;
            detail::keep_stored_secret_values(&mut obj, &stored);
        }
        let result = outcome(
            objects::replace(
                &self.client,
                &resource,
                namespace.as_deref(),
                &name,
                &obj,
                dry_run,
            )
            .await,
        );
        if !dry_run {
            self.audit(
                "update",
                &describe(&resource, namespace.as_deref(), &name),
                &result,
            );
        }
        result
    }

    async fn delete(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
        propagation: String,
    ) -> Result<Vec<String>, BackendError> {
        check_target(&resource, namespace.as_deref(), &name)?;
        let result = objects::delete(
            &self.client,
            &resource,
            namespace.as_deref(),
            &name,
            &propagation,
        )
        .await
        .map_err(|e| user_error(e, &resource, &name));
        self.audit(
            "delete",
            &describe(&resource, namespace.as_deref(), &name),
            &result,
        );
        result
    }
}

impl ClusterBackend {
    /// One line per mutation: who, what, and how it ended.
    fn audit<T: AuditResult>(&self, verb: &str, what: &str, result: &Result<T, BackendError>) {
        let outcome = match result {
            Ok(r) => r.summary(),
            Err(e) => format!("failed: {e}"),
        };
        // Debug formatting escapes control characters: a crafted name cannot forge lines.
        tracing::info!(target: "portico::audit", user = ?self.who.name(), verb, object = ?what, result = ?outcome, "audit");
    }
}

/// How an outcome reads in the audit log.
trait AuditResult {
    fn summary(&self) -> String;
}

impl AuditResult for SubmitOutcome {
    fn summary(&self) -> String {
        match self {
            SubmitOutcome::Accepted { .. } => "ok".into(),
            SubmitOutcome::Rejected(r) => format!("refused ({}): {}", r.code, r.message),
        }
    }
}

impl AuditResult for Vec<String> {
    fn summary(&self) -> String {
        if self.is_empty() {
            "ok".into()
        } else {
            format!("ok, held by finalizers {}", self.join(", "))
        }
    }
}

impl AuditResult for String {
    fn summary(&self) -> String {
        "ok".into()
    }
}

fn describe(resource: &ResourceRef, namespace: Option<&str>, name: &str) -> String {
    format!("{} {}/{name}", resource.plural, namespace.unwrap_or(""))
}

/// Refuses names that could steer a request to another API path.
fn check_target(
    resource: &ResourceRef,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), BackendError> {
    let namespace_ok = namespace.is_none_or(app::table::model::is_path_segment);
    if !resource.is_valid() || !namespace_ok || !app::table::model::is_object_name(name) {
        return Err(BackendError::NotFound(format!(
            "{} {name}",
            resource.plural
        )));
    }
    Ok(())
}

fn stack_resource() -> ResourceRef {
    use crate::stacks::resource::{GROUP, PLURAL, VERSION};
    ResourceRef::new(GROUP, VERSION, PLURAL)
}

fn user_error(e: ObjectError, resource: &ResourceRef, name: &str) -> BackendError {
    let what = format!("{} {name}", resource.plural);
    match e {
        ObjectError::Rejected(r) if r.code == 404 => BackendError::NotFound(what),
        ObjectError::Rejected(r) if r.code == 403 => BackendError::Forbidden(what),
        ObjectError::Rejected(r) => BackendError::Invalid(r.message),
        other => BackendError::Unreachable(other.to_string()),
    }
}

fn dynamic_object(object: serde_json::Value) -> Result<kube::api::DynamicObject, BackendError> {
    serde_json::from_value(object)
        .map_err(|e| BackendError::Invalid(format!("The object is not a Kubernetes object: {e}")))
}

/// A write's result as the form shows it: accepted, or refused with the server's causes.
fn outcome(
    result: Result<kube::api::DynamicObject, ObjectError>,
) -> Result<SubmitOutcome, BackendError> {
    match result {
        Ok(saved) => Ok(SubmitOutcome::Accepted {
            name: saved.metadata.name.unwrap_or_default(),
            namespace: saved.metadata.namespace,
        }),
        Err(ObjectError::Rejected(r)) => Ok(SubmitOutcome::Rejected(r)),
        Err(e) => Err(BackendError::Invalid(e.to_string())),
    }
}
