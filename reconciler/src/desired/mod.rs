//! The objects a Stack should own, computed from its spec and the catalog: pure, so
//! the reconciler applies the same thing every time (server-side apply makes a
//! repeated or half-finished reconcile converge instead of duplicating). One builder
//! per child: [`credentials`] (the Secret), [`pod`] (the Pod template), [`workload`]
//! (its StatefulSet or Deployment), [`service`] (the Services).

mod credentials;
mod pod;
mod service;
#[cfg(test)]
mod tests;
mod workload;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::catalog::{CatalogEntry, Plan};
use super::stack::{API_VERSION, KIND, Stack, StackSpec};

pub use credentials::{Passwords, generate_password, legacy_password_move, password_in};

/// The label every child carries, naming its Stack (used to find children to remove).
pub const STACK_LABEL: &str = "portico.dev/stack";
/// The key of the user's password (the one apps connect with, and bindings hand over)
/// in the credentials Secret.
pub const PASSWORD_KEY: &str = "app-password";
/// The key of the administrator's password (MySQL's root), for people only.
pub const ADMIN_PASSWORD_KEY: &str = "admin-password";
/// The one key of a credentials Secret made before Stacks had an app user: the
/// password of the catalog's `passwordEnv` then, MySQL's root.
pub const LEGACY_PASSWORD_KEY: &str = "password";

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ChildrenError {
    #[error("the Stack has no name, namespace or uid yet")]
    Incomplete,
    #[error("the catalog offers no version {version:?} of {choice}; offered: {offered}")]
    UnknownVersion {
        choice: String,
        version: String,
        offered: String,
    },
    #[error("the catalog offers no plan {plan:?} of {choice}; offered: {offered}")]
    UnknownPlan {
        choice: String,
        plan: String,
        offered: String,
    },
}

/// The workload: a StatefulSet for stateful catalog entries, else a Deployment.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Stateful(Box<StatefulSet>),
    Stateless(Box<Deployment>),
}

/// Everything one Stack owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Children {
    pub secret: Option<Secret>,
    pub workload: Workload,
    pub headless: Option<Service>,
    pub service: Service,
}

pub fn secret_name(stack: &str) -> String {
    format!("{stack}-credentials")
}

pub fn headless_name(stack: &str) -> String {
    format!("{stack}-headless")
}

/// The name of a stateful Stack's volume claim template.
pub const DATA_VOLUME: &str = "data";

/// The claim the StatefulSet controller makes for `ordinal` of Stack `stack`.
pub fn claim_name(stack: &str, ordinal: i32) -> String {
    format!("{}{ordinal}", claim_prefix(stack))
}

/// What the names of Stack `stack`'s claims start with.
pub fn claim_prefix(stack: &str) -> String {
    format!("{DATA_VOLUME}-{stack}-")
}

/// On a credentials Secret no Stack owns (deletionPolicy Retain): the volume claims
/// whose data its password opens (their names' prefix), for whoever finds it kept.
pub const KEPT_WITH_ANNOTATION: &str = "portico.dev/opens-volumes";

/// On the same Secret: the uid of the Stack whose data it opens, the Stack the claims
/// were kept from (a Stack made again under the name is another object).
pub const KEPT_FROM_ANNOTATION: &str = "portico.dev/kept-from-uid";

/// What every child of one Stack shares: where it lives, who owns it, how it is
/// labelled, and which catalog entry, plan and image make it.
struct Shape<'a> {
    name: String,
    namespace: String,
    owner: OwnerReference,
    /// The labels a workload selects its Pods by.
    selector: BTreeMap<String, String>,
    /// The selector's labels and the descriptive ones every child carries.
    labels: BTreeMap<String, String>,
    spec: &'a StackSpec,
    entry: &'a CatalogEntry,
    plan: Option<&'a Plan>,
    image: String,
    /// Kept data needs its password: a Stack that keeps its volumes does not own the
    /// Secret that opens them, and its StatefulSet retains the claims.
    keeps_data: bool,
}

impl Shape<'_> {
    /// The metadata of the child called `name`: the Stack's namespace, labels and
    /// controller reference.
    fn meta(&self, name: String) -> ObjectMeta {
        ObjectMeta {
            name: Some(name),
            namespace: Some(self.namespace.clone()),
            labels: Some(self.labels.clone()),
            owner_references: Some(vec![self.owner.clone()]),
            ..Default::default()
        }
    }
}

/// The controller ownerReference every child carries.
pub fn owner_reference(stack: &Stack) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        name: stack.metadata.name.clone()?,
        uid: stack.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The children of `stack` as `entry` describes them; `passwords` fill a new
/// credentials Secret (one that exists keeps its own).
pub fn desired(
    stack: &Stack,
    entry: &CatalogEntry,
    passwords: Passwords,
) -> Result<Children, ChildrenError> {
    let shape = shape(stack, entry)?;
    Ok(Children {
        secret: credentials::secret(&shape, passwords),
        workload: workload::workload(&shape, pod::template(&shape)),
        headless: service::headless(&shape),
        service: service::service(&shape),
    })
}

fn shape<'a>(stack: &'a Stack, entry: &'a CatalogEntry) -> Result<Shape<'a>, ChildrenError> {
    let name = stack
        .metadata
        .name
        .clone()
        .ok_or(ChildrenError::Incomplete)?;
    let namespace = stack
        .metadata
        .namespace
        .clone()
        .ok_or(ChildrenError::Incomplete)?;
    let owner = owner_reference(stack).ok_or(ChildrenError::Incomplete)?;
    let spec = &stack.spec;
    let image = entry
        .image_for(spec.version.as_deref())
        .ok_or_else(|| ChildrenError::UnknownVersion {
            choice: spec.choice.clone(),
            version: spec.version.clone().unwrap_or_default(),
            offered: entry
                .versions
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        })?
        .to_string();
    let plan = entry
        .plan(spec.plan.as_deref())
        .map_err(|offered| ChildrenError::UnknownPlan {
            choice: spec.choice.clone(),
            plan: spec.plan.clone().unwrap_or_default(),
            offered,
        })?;
    let selector: BTreeMap<String, String> = [
        ("app.kubernetes.io/instance".to_string(), name.clone()),
        (STACK_LABEL.to_string(), name.clone()),
    ]
    .into();
    let mut labels = selector.clone();
    labels.insert("app.kubernetes.io/name".into(), spec.choice.clone());
    labels.insert("app.kubernetes.io/managed-by".into(), "portico".into());
    Ok(Shape {
        keeps_data: entry.stateful && spec.deletion_policy.keeps_data(),
        name,
        namespace,
        owner,
        selector,
        labels,
        spec,
        entry,
        plan,
        image,
    })
}
