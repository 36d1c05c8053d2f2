//! The `StackBinding` kind (portico.dev/v1alpha1) as Rust types. The CRD is the
//! hand-written `deploy/crds/stackbinding.yaml`; as with `Stack`, everything it
//! requires is required here, so no object the API server accepts fails to deserialize.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "portico.dev",
    version = "v1alpha1",
    kind = "StackBinding",
    plural = "stackbindings",
    namespaced,
    status = "StackBindingStatus",
    derive = "PartialEq",
    derive = "Default",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct StackBindingSpec {
    /// The Stack whose connection details are handed over, in the binding's namespace.
    pub stack: String,
    pub workload: WorkloadRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_prefix: Option<String>,
}

/// What receives the variables, in the binding's namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadRef {
    pub kind: WorkloadKind,
    pub name: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WorkloadKind {
    #[default]
    Deployment,
    StatefulSet,
    /// Another Stack: its own Deployment or StatefulSet.
    Stack,
}

/// The list of Stack `stack`'s bindings: the API server filters by `spec.stack`, a
/// selectable field of the CRD.
pub fn bindings_of(stack: &str) -> kube::api::ListParams {
    kube::api::ListParams::default().fields(&format!("spec.stack={stack}"))
}

impl WorkloadKind {
    /// As the binding's spec says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deployment => "Deployment",
            Self::StatefulSet => "StatefulSet",
            Self::Stack => "Stack",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackBindingStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The workload the variables are in (`Deployment/app`), so that a binding pointed
    /// elsewhere first takes them out of the old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default)]
    pub variables: Vec<String>,
    #[serde(default)]
    pub conditions: Vec<Condition>,
}
