//! The `Stack` kind (portico.dev/v1alpha1) as Rust types. The CRD itself is the
//! hand-written `deploy/crds/stack.yaml`; these types read and write what it declares.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const GROUP: &str = "portico.dev";
pub const VERSION: &str = "v1alpha1";
pub const API_VERSION: &str = "portico.dev/v1alpha1";
pub const KIND: &str = "Stack";
pub const PLURAL: &str = "stacks";

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Stack {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: StackSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<StackStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<StackResources>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    #[serde(default)]
    pub conditions: Vec<StackCondition>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub service: String,
    pub port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_port: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StackCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

// By hand so that apiVersion and kind are always written, as the API server requires.
impl Serialize for Stack {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = serializer.serialize_struct("Stack", 5)?;
        out.serialize_field("apiVersion", API_VERSION)?;
        out.serialize_field("kind", KIND)?;
        out.serialize_field("metadata", &self.metadata)?;
        out.serialize_field("spec", &self.spec)?;
        match &self.status {
            Some(status) => out.serialize_field("status", status)?,
            None => out.skip_field("status")?,
        }
        out.end()
    }
}

impl Resource for Stack {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        KIND.into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        GROUP.into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        VERSION.into()
    }
    fn api_version(_: &()) -> Cow<'_, str> {
        API_VERSION.into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        PLURAL.into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
