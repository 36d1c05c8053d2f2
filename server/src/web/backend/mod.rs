//! The server's implementation of the UI's [`Backend`] seam: every method acts with
//! the caller's own client, resolves kinds through the registry, and maps the API
//! server's failures to the UI's typed errors in one place ([`user_error`]).

pub mod asker;
pub mod bind;
pub mod binding_offer;
pub mod detail;
pub mod find;
pub mod namespace_access;
pub mod objects;
pub mod pod_summary;
pub mod stack_change;
pub mod stack_data;
pub mod stack_places;
pub mod usage;
pub mod workload_selector;

use app::backend::{Backend, BackendError};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use portico_core::access::NamespaceAccess;
use portico_core::find::FoundObjects;
use portico_core::payload::{
    ApiRejection, BindingOffer, CrdSummary, DataVolume, FormSpec, ObjectDetail, Permissions,
    StackChangePreview, StackData, StackOffer, StackPlace, SubmitOutcome,
};
use portico_core::resource::{ObjectKey, ResourceKind, ResourceRef};
use portico_core::usage::{Usage, UsageTarget};
use tracing::instrument;

use self::objects::ObjectError;
use crate::auth::access::{AccessQuestion, AccessReviews};
use crate::cluster::caller::Caller;
use crate::cluster::error::{ApiError, Failure};
use crate::cluster::registry::KindRegistry;
use crate::reconcile::catalog::LiveCatalog;

pub struct ClusterBackend {
    pub kinds: KindRegistry,
    /// The client acting as the caller.
    pub client: kube::Client,
    /// What the Provision page offers.
    pub stacks: LiveCatalog,
    /// Access checks as the caller.
    pub reviews: std::sync::Arc<AccessReviews>,
    /// Who is acting (audit lines, access checks, spans).
    pub who: Caller,
    /// Usage reads running, by person (each may hold a whole list of figures).
    pub usage_reads: std::sync::Arc<usage::UsageGate>,
    /// The names of what people may list, kept while they search.
    pub object_names: std::sync::Arc<find::ObjectNames>,
}

impl ClusterBackend {
    /// The person, for endpoints that ask what they may do.
    fn asker(&self) -> asker::Asker<'_> {
        asker::Asker {
            client: &self.client,
            reviews: &self.reviews,
            who: &self.who,
        }
    }
}

#[async_trait::async_trait]
impl Backend for ClusterBackend {
    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn list_crds(&self) -> Result<Vec<CrdSummary>, BackendError> {
        if !self.kinds.is_loaded() {
            return Err(BackendError::NotReady);
        }
        Ok(self.kinds.crds())
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn list_resources(&self) -> Result<Vec<ResourceKind>, BackendError> {
        if !self.kinds.is_loaded() {
            return Err(BackendError::NotReady);
        }
        Ok(self.kinds.kinds())
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_namespace_access(
        &self,
        namespace: String,
    ) -> Result<NamespaceAccess, BackendError> {
        if !portico_core::resource::is_path_segment(&namespace) {
            return Err(BackendError::BadRequest(
                "namespace must be a DNS-style name".into(),
            ));
        }
        if !self.kinds.is_loaded() {
            return Err(BackendError::NotReady);
        }
        let status = crate::auth::rules::review_in(&self.client, &namespace)
            .await
            .map_err(|e| {
                user_error(
                    e.into(),
                    &format!("review your permissions in namespace {namespace}"),
                    "Your permissions",
                )
            })?;
        Ok(namespace_access::summarize(
            &namespace,
            &status,
            &self.kinds.kinds(),
        ))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn find_objects(
        &self,
        query: String,
        namespace: Option<String>,
        opened: Option<bool>,
    ) -> Result<FoundObjects, BackendError> {
        find::check_query(&query).map_err(BackendError::BadRequest)?;
        let hint = namespace.filter(|ns| !ns.is_empty());
        if hint
            .as_deref()
            .is_some_and(|ns| !portico_core::resource::is_path_segment(ns))
        {
            return Err(BackendError::BadRequest(
                "namespace must be a DNS-style name".into(),
            ));
        }
        // A namespace typed in the query (`team/web`) is looked in first.
        let hint = find::asked_namespace(&query).map(str::to_string).or(hint);
        if !self.kinds.is_loaded() {
            return Err(BackendError::NotReady);
        }
        // Names read with one token answer only that token's keystrokes.
        let owner = self.who.feed_owner().unwrap_or_else(|| "portal".into());
        Ok(find::find(
            &self.object_names,
            owner,
            &self.client,
            self.kinds.kinds(),
            hint,
            &query,
            opened.unwrap_or(false),
        )
        .await)
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn list_namespaces(&self) -> Result<Vec<String>, BackendError> {
        crate::live::views::home_scope::namespaces(&self.client)
            .await
            .map_err(|e| user_error(e.into(), "list namespaces", "Namespaces"))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_usage(&self, target: UsageTarget) -> Result<Usage, BackendError> {
        let pods = ResourceRef::new("", "v1", "pods");
        let (resource, namespace, name) = match &target {
            UsageTarget::Pod { namespace, name } => (pods, Some(namespace.as_str()), name.as_str()),
            UsageTarget::Node { name } => {
                (ResourceRef::new("", "v1", "nodes"), None, name.as_str())
            }
            UsageTarget::Workload { namespace, .. } => (pods, Some(namespace.as_str()), "-"),
            UsageTarget::Table { namespace } => (pods, namespace.as_deref(), "-"),
        };
        check_target(&resource, namespace, name)?;
        if let UsageTarget::Workload { selector, .. } = &target
            && selector.len() > portico_core::table::wire::MAX_SELECTOR_LEN
        {
            return Err(BackendError::BadRequest(format!(
                "a label selector is at most {} bytes",
                portico_core::table::wire::MAX_SELECTOR_LEN
            )));
        }
        let Some(_pass) = self.usage_reads.enter(self.who.name()) else {
            return Err(BackendError::Busy(format!(
                "Portico is already reading usage for you {} times at once, or for everyone as often as it allows: it asks again shortly.",
                usage::PER_PERSON
            )));
        };
        let what = match &target {
            UsageTarget::Pod { namespace, name } => format!("pod {namespace}/{name}"),
            UsageTarget::Node { name } => format!("node {name}"),
            _ => format!("pods in {}", namespace.unwrap_or("every namespace")),
        };
        usage::usage(&self.client, &target)
            .await
            .map_err(|e| user_error(e, &format!("read the usage of {what}"), &what))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_object(&self, key: ObjectKey) -> Result<ObjectDetail, BackendError> {
        let ObjectKey {
            resource,
            namespace,
            name,
        } = key;
        check_target(&resource, namespace.as_deref(), &name)?;
        let what = describe(&resource, namespace.as_deref(), &name);
        detail::object_detail(
            &self.client,
            &self.kinds,
            &resource,
            namespace.as_deref(),
            &name,
        )
        .await
        .map_err(|e| user_error(e, &format!("read {what}"), &what))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_permissions(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
    ) -> Result<Permissions, BackendError> {
        if !resource.is_valid() {
            return Err(BackendError::Invalid("Not a resource name.".into()));
        }
        let ask = |verb: &str| AccessQuestion {
            verb: verb.into(),
            group: resource.group.clone(),
            resource: resource.plural.clone(),
            subresource: None,
            namespace: namespace.clone(),
            name: None,
        };
        let (create, update, delete) = (ask("create"), ask("update"), ask("delete"));
        let (create, update, delete) = futures::join!(
            self.reviews.allowed(&self.who, &create),
            self.reviews.allowed(&self.who, &update),
            self.reviews.allowed(&self.who, &delete),
        );
        let unreachable = |e: kube::Error| user_error(e.into(), "review access", "access");
        Ok(Permissions {
            create: create.map_err(unreachable)?,
            update: update.map_err(unreachable)?,
            delete: delete.map_err(unreachable)?,
        })
    }

    async fn signed_in_as(&self) -> Result<Option<String>, BackendError> {
        Ok(self.who.user_name().map(str::to_string))
    }

    #[instrument(skip(self), fields(caller = self.who.name()))]
    async fn stack_offers(&self) -> Result<Vec<StackOffer>, BackendError> {
        Ok(self
            .stacks
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
                versions: {
                    let mut versions: Vec<String> = e.versions.keys().cloned().collect();
                    versions.sort_by(|a, b| crate::reconcile::catalog::version_order(a, b));
                    versions
                },
                port: e.port,
                stateful: e.stateful,
                plans: e
                    .plans
                    .iter()
                    .map(|p| portico_core::payload::PlanOffer {
                        name: p.name.clone(),
                        description: p.description.clone(),
                        storage: p.storage.clone().filter(|_| e.stateful),
                        requests: p.requests.clone().into_iter().collect(),
                        limits: p.limits.clone().into_iter().collect(),
                    })
                    .collect(),
                default_plan: e.default_plan.clone(),
            })
            .collect())
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_stack_data(
        &self,
        namespace: String,
        name: String,
    ) -> Result<StackData, BackendError> {
        check_target(&stack_resource(), Some(&namespace), &name)?;
        let what = format!("stacks {namespace}/{name}");
        stack_data::stack_data(&self.client, &self.stacks.current(), &namespace, &name)
            .await
            .map_err(|e| user_error(e, &format!("read {what}"), &what))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn preview_stack_change(
        &self,
        namespace: String,
        name: String,
        version: Option<String>,
        plan: Option<String>,
    ) -> Result<StackChangePreview, BackendError> {
        check_target(&stack_resource(), Some(&namespace), &name)?;
        let what = format!("stacks {namespace}/{name}");
        let catalog = self.stacks.current();
        stack_change::preview(&self.client, &catalog, (&namespace, &name), version, plan)
            .await
            .map_err(|e| change_error(e, &what))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn change_stack(
        &self,
        namespace: String,
        name: String,
        version: Option<String>,
        plan: Option<String>,
    ) -> Result<(), BackendError> {
        check_target(&stack_resource(), Some(&namespace), &name)?;
        let what = format!("stacks {namespace}/{name}");
        let catalog = self.stacks.current();
        let result =
            stack_change::change(&self.client, &catalog, (&namespace, &name), version, plan)
                .await
                .map_err(|e| change_error(e, &what));
        self.audit(
            "change-version-or-plan",
            &what,
            &result
                .as_ref()
                .map(|()| String::new())
                .map_err(Clone::clone),
        );
        result
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_binding_offer(
        &self,
        namespace: String,
        stack: String,
    ) -> Result<BindingOffer, BackendError> {
        check_target(&stack_resource(), Some(&namespace), &stack)?;
        let asker = self.asker();
        binding_offer::offer(&asker, &namespace, &stack)
            .await
            .map_err(|e| {
                user_error(
                    e,
                    &format!("read Stack {stack} and list workloads in {namespace}"),
                    &format!("stacks {namespace}/{stack}"),
                )
            })
    }

    #[instrument(skip(self, binding), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn bind_workload(
        &self,
        binding: serde_json::Value,
    ) -> Result<SubmitOutcome, BackendError> {
        let obj = dynamic_object(binding.clone())?;
        let typed: crate::reconcile::binding::kind::StackBinding = serde_json::from_value(binding)
            .map_err(|e| {
                BackendError::Invalid(format!("The binding is not a StackBinding: {e}"))
            })?;
        let namespace = obj.metadata.namespace.clone().unwrap_or_default();
        let workload = &typed.spec.workload;
        check_target(&stack_resource(), Some(&namespace), &typed.spec.stack)?;
        if !portico_core::resource::is_object_name(&workload.name) {
            return Err(BackendError::NotFound(format!(
                "{:?} {}",
                workload.kind, workload.name
            )));
        }
        let what = format!("{:?} {namespace}/{}", workload.kind, workload.name);
        let accepted = bind::accept(&self.client, &namespace, &typed).await;
        self.audit(
            "accept-binding",
            &what,
            &accepted
                .as_ref()
                .map(|a| {
                    if a.is_some() {
                        "accepted"
                    } else {
                        "already accepted"
                    }
                    .to_string()
                })
                .map_err(|e| BackendError::Invalid(e.to_string())),
        );
        let accepted = accepted.map_err(|e| {
            user_error(
                e,
                &format!("change {what} to accept the binding's variables"),
                &what,
            )
        })?;
        let result = outcome(objects::create(&self.client, &self.kinds, &obj, false).await);
        self.audit(
            "create",
            &format!(
                "StackBinding {namespace}/{}",
                obj.metadata.name.as_deref().unwrap_or("")
            ),
            &result,
        );
        // Refused: the acceptance goes again. Made, or made already (the binding the
        // person meant is there, and now works): it stays.
        let stays = matches!(
            &result,
            Ok(SubmitOutcome::Accepted { .. })
                | Ok(SubmitOutcome::Rejected(ApiRejection { code: 409, .. }))
        );
        if let (Some(accepted), false) = (accepted, stays) {
            accepted.undo().await;
        }
        result
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn stack_places(&self) -> Result<Vec<StackPlace>, BackendError> {
        stack_places::places(&self.asker()).await.map_err(|e| {
            user_error(
                e,
                "list namespaces and ask where you may create Stacks",
                "Namespaces",
            )
        })
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_kept_volumes(&self) -> Result<Vec<DataVolume>, BackendError> {
        stack_data::kept_volumes(&self.client).await.map_err(|e| {
            user_error(
                e,
                "list volume claims and Stacks in every namespace",
                "volume claims",
            )
        })
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn reveal_stack_password(
        &self,
        namespace: String,
        name: String,
    ) -> Result<String, BackendError> {
        check_target(&stack_resource(), Some(&namespace), &name)?;
        let secret_name = crate::reconcile::desired::secret_name(&name);
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
        let secret = read.map_err(|e| user_error(e.into(), &format!("read {what}"), &what))?;
        crate::reconcile::desired::password_in(&secret)
            .ok_or(BackendError::NotFound(format!("the password in {what}")))
    }

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_form_spec(&self, resource: ResourceRef) -> Result<FormSpec, BackendError> {
        self.kinds
            .form_spec(&resource.group, &resource.plural, &resource.version)
            .ok_or_else(|| {
                BackendError::NotFound(format!("{} {}", resource.plural, resource.version))
            })
    }

    #[instrument(skip(self, object), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn submit_object(
        &self,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError> {
        let obj = dynamic_object(object.clone())?;
        // A StackBinding made from a form is made as the Bind button makes it: its
        // workload accepts the variables first, or the reconciler could write none.
        let binding = obj.types.as_ref().is_some_and(|t| {
            t.api_version == portico_core::portico_kinds::API_VERSION
                && t.kind == portico_core::portico_kinds::BINDING_KIND
        });
        if binding && !dry_run {
            return self.bind_workload(object).await;
        }
        let result = outcome(objects::create(&self.client, &self.kinds, &obj, dry_run).await);
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

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn fetch_object_json(&self, key: ObjectKey) -> Result<serde_json::Value, BackendError> {
        let ObjectKey {
            resource,
            namespace,
            name,
        } = key;
        check_target(&resource, namespace.as_deref(), &name)?;
        let mut obj = objects::get(&self.client, &resource, namespace.as_deref(), &name)
            .await
            .map_err(|e| object_error(e, "read", &resource, namespace.as_deref(), &name))?;
        if detail::is_secret(&resource) {
            detail::strip_secret_values(&mut obj);
        }
        serde_json::to_value(obj).map_err(|e| BackendError::Invalid(e.to_string()))
    }

    #[instrument(skip(self, object), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn replace_object(
        &self,
        key: ObjectKey,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError> {
        let ObjectKey {
            resource,
            namespace,
            name,
        } = key;
        check_target(&resource, namespace.as_deref(), &name)?;
        let mut obj = dynamic_object(object)?;
        if detail::is_secret(&resource) {
            // The form was given the Secret without its values; keep the stored ones.
            let stored = objects::get(&self.client, &resource, namespace.as_deref(), &name)
                .await
                .map_err(|e| object_error(e, "read", &resource, namespace.as_deref(), &name))?;
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

    #[instrument(skip(self), fields(caller = self.who.name()), err(level = "info", Display))]
    async fn delete_object(
        &self,
        key: ObjectKey,
        propagation: String,
    ) -> Result<Vec<String>, BackendError> {
        let ObjectKey {
            resource,
            namespace,
            name,
        } = key;
        check_target(&resource, namespace.as_deref(), &name)?;
        let result = objects::delete(
            &self.client,
            &resource,
            namespace.as_deref(),
            &name,
            &propagation,
        )
        .await
        .map_err(|e| object_error(e, "delete", &resource, namespace.as_deref(), &name));
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
    let namespace_ok = namespace.is_none_or(portico_core::resource::is_path_segment);
    if !resource.is_valid() || !namespace_ok || !portico_core::resource::is_object_name(name) {
        return Err(BackendError::NotFound(format!(
            "{} {name}",
            resource.plural
        )));
    }
    Ok(())
}

fn stack_resource() -> ResourceRef {
    use crate::reconcile::stack::{GROUP, PLURAL, VERSION};
    ResourceRef::new(GROUP, VERSION, PLURAL)
}

fn change_error(e: stack_change::ChangeError, what: &str) -> BackendError {
    match e {
        stack_change::ChangeError::Api(e) => user_error(e, &format!("change {what}"), what),
        stack_change::ChangeError::Refused(why) => BackendError::Invalid(why),
    }
}

/// The API server's failure as the page shows it: `doing` says what was refused
/// ("read secrets default/db"), `what` names the object.
fn user_error(e: ApiError, doing: &str, what: &str) -> BackendError {
    match e.failure() {
        Failure::NotFound => BackendError::NotFound(what.to_string()),
        Failure::Forbidden => BackendError::Forbidden(doing.to_string()),
        Failure::Unauthorized => BackendError::Unauthorized,
        Failure::Conflict | Failure::AlreadyExists | Failure::Gone => {
            BackendError::Conflict(e.to_string())
        }
        Failure::Invalid => BackendError::Invalid(
            e.rejection()
                .map(|r| r.message.clone())
                .unwrap_or_else(|| e.to_string()),
        ),
        Failure::Unavailable | Failure::Other => BackendError::Unreachable(e.to_string()),
    }
}

/// [`user_error`] for a call about one object.
fn object_error(
    e: ObjectError,
    verb: &str,
    resource: &ResourceRef,
    namespace: Option<&str>,
    name: &str,
) -> BackendError {
    let what = describe(resource, namespace, name);
    match e {
        ObjectError::Api(e) => user_error(e, &format!("{verb} {what}"), &what),
        ObjectError::MissingType | ObjectError::UnknownKind(_) | ObjectError::BadNamespace(_) => {
            BackendError::Invalid(e.to_string())
        }
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
        Err(ObjectError::Api(ApiError::Refused(r))) => Ok(SubmitOutcome::Rejected(r)),
        Err(e) => Err(BackendError::Invalid(e.to_string())),
    }
}
