//! The `Stack` kind (portico.dev/v1alpha1) as Rust types, through kube's
//! `CustomResource` derive. The CRD itself is the hand-written `deploy/crds/stack.yaml`
//! (its schema carries CEL rules the derive cannot express): these types read and write
//! what it declares, and every field the CRD requires is required here too, so that no
//! object the API server accepts fails to deserialize (one such object would stop the
//! reconciler's watch for everyone).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use portico_core::portico_kinds::{
    API_VERSION, GROUP, STACK_KIND as KIND, STACK_PLURAL as PLURAL, VERSION,
};

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "portico.dev",
    version = "v1alpha1",
    kind = "Stack",
    plural = "stacks",
    namespaced,
    status = "StackStatus",
    derive = "PartialEq",
    derive = "Default",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct StackSpec {
    #[serde(default)]
    pub choice: String,
    #[serde(default = "one")]
    pub replicas: i32,
    #[serde(default = "cluster_ip")]
    pub exposure: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// One of the catalog's plans for the choice (its default when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<StackResources>,
    /// What deleting the Stack does to its data (volumes and the password that opens
    /// them). The CRD defaults it to `Retain`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Take over the volumes a deleted Stack of the same name kept (deletionPolicy
    /// Retain). An explicit choice: the data is someone's, and with `Delete` this
    /// Stack's deletion would remove it, so admission asks whether the person may
    /// delete claims in the namespace.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reattach_kept_data: bool,
}

/// Whether a Stack's data outlives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeletionPolicy {
    /// The volume claims and the credentials Secret stay after the Stack is deleted; a
    /// Stack made again under the same name takes them over when it asks to
    /// (`reattachKeptData`).
    #[default]
    Retain,
    /// The volume claims and the credentials Secret go with the Stack.
    Delete,
}

impl DeletionPolicy {
    pub fn keeps_data(self) -> bool {
        self == Self::Retain
    }
}

fn one() -> i32 {
    1
}

/// Reachable inside the cluster only unless the Stack asks for more: a NodePort opens
/// the stack on every node's address.
fn cluster_ip() -> String {
    "ClusterIP".into()
}

/// Requests and limits as the user typed them (quantities as strings or numbers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackResources {
    #[serde(default)]
    pub requests: BTreeMap<String, Value>,
    #[serde(default)]
    pub limits: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
    /// The version the workload runs (as the catalog names its image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub service: String,
    pub port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_port: Option<i32>,
    /// Who the credentials Secret's password is for: the user apps connect as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The server's administrator (MySQL's root), whose password the Secret keeps
    /// apart, for people only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_user: Option<String>,
    /// The database the stack made for its users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// The scheme of a connection URL (`mysql`, `http`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
}

#[cfg(test)]
mod tests {
    use kube::Resource;
    use portico_core::portico_kinds;

    use super::Stack;
    use crate::binding::kind::StackBinding;

    /// The derives take literals; the UI addresses the kinds by the shared constants.
    #[test]
    fn the_derives_spell_the_kinds_as_the_ground_floor_does() {
        assert_eq!(Stack::api_version(&()), portico_kinds::API_VERSION);
        assert_eq!(Stack::kind(&()), portico_kinds::STACK_KIND);
        assert_eq!(Stack::plural(&()), portico_kinds::STACK_PLURAL);
        assert_eq!(StackBinding::api_version(&()), portico_kinds::API_VERSION);
        assert_eq!(StackBinding::kind(&()), portico_kinds::BINDING_KIND);
        assert_eq!(StackBinding::plural(&()), portico_kinds::BINDING_PLURAL);
    }
}
