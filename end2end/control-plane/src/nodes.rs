//! The local cluster's simulated nodes and its default StorageClass.
//!
//! A simulated node is a plain Node object with KWOK's annotation: KWOK keeps its
//! heartbeat and reports the Pods the scheduler binds to it Running and Ready, as a
//! kubelet would, without running any container. Everything else (ReplicaSets, Pods,
//! bound volumes, EndpointSlices, garbage collection) comes from the real controllers.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// The annotation KWOK is told to manage nodes by.
pub const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");
/// The label every simulated node carries (to list them).
pub const NODE_LABEL: (&str, &str) = ("type", "kwok");

/// What one node offers. The defaults are a small VM's (2 CPUs, 4 GiB, kubelet's
/// default of 110 Pods), so a Stack asking for more than that cannot be placed.
#[derive(Debug, Clone)]
pub struct Capacity {
    pub cpu: String,
    pub memory: String,
    pub pods: u32,
}

impl Default for Capacity {
    fn default() -> Self {
        Self {
            cpu: "2".into(),
            memory: "4Gi".into(),
            pods: 110,
        }
    }
}

/// How many nodes a new local cluster starts with.
pub const DEFAULT_NODES: usize = 3;

/// The Node object for simulated node `name`.
pub fn node(name: &str, capacity: &Capacity) -> Value {
    let resources = json!({
        "cpu": capacity.cpu, "memory": capacity.memory,
        "pods": capacity.pods.to_string(), "ephemeral-storage": "100Gi",
    });
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_ANNOTATION.0: KWOK_ANNOTATION.1, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                NODE_LABEL.0: NODE_LABEL.1,
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node-role.kubernetes.io/agent": "",
            },
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64", "operatingSystem": "linux",
                "kubeletVersion": crate::binaries::pinned_kubernetes_version(),
                "kubeProxyVersion": "", "containerRuntimeVersion": "kwok",
                "osImage": "simulated (KWOK)", "kernelVersion": "",
                "machineID": "", "systemUUID": "", "bootID": "",
            },
            "phase": "Running",
        },
    })
}

/// The default StorageClass of simulated nodes: the controller-manager's test-only
/// hostPath provisioner (see [`storage_class_of`]).
pub fn storage_class() -> Value {
    storage_class_of("kubernetes.io/host-path")
}

/// The default StorageClass, served by `provisioner`, which makes a volume for a claim
/// once the scheduler has placed the claim's first Pod (as kind's default class does).
/// Binding at once instead made the scheduler call a Pod unschedulable ("unbound
/// immediate PersistentVolumeClaims") for as long as its claim took to bind, and retry
/// only after its backoff.
pub fn storage_class_of(provisioner: &str) -> Value {
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "standard",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    })
}

/// Whether a NodeList holds at least `count` nodes and every one is Ready.
pub fn all_ready(list: &Value, count: usize) -> bool {
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    items.len() >= count && items.iter().all(is_ready)
}

/// Whether a Node reports the condition Ready=True.
pub fn is_ready(node: &Value) -> bool {
    node.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Adds simulated nodes `{prefix}-{from}` … to a running cluster (a benchmark that
/// needs room for more Pods, as an autoscaler would). Returns their names.
pub async fn add(
    client: &kube::Client,
    prefix: &str,
    range: std::ops::Range<usize>,
    capacity: &Capacity,
) -> Result<Vec<String>, kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let mut names = Vec::new();
    for i in range {
        let name = format!("{prefix}-{i}");
        let object: Node =
            serde_json::from_value(node(&name, capacity)).map_err(kube::Error::SerdeError)?;
        api.create(&PostParams::default(), &object).await?;
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_needs_every_node_and_the_count() {
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let not_yet = json!({"status": {}});
        assert!(all_ready(&json!({"items": [ready, ready]}), 2));
        assert!(!all_ready(&json!({"items": [ready]}), 2));
        assert!(!all_ready(&json!({"items": [ready, not_yet]}), 2));
        assert!(!all_ready(&json!({}), 1));
    }

    #[test]
    fn a_node_is_a_valid_node_object() {
        let node: Node = serde_json::from_value(node("n-0", &Capacity::default())).expect("Node");
        let status = node.status.expect("status");
        assert_eq!(
            status.allocatable.expect("allocatable")["cpu"].0,
            "2".to_string()
        );
    }
}
