//! Room for many Pods on a simulated (KWOK) cluster, for benchmarks.
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use kube::runtime::wait::await_condition;
use portico_control_plane::nodes::{self, Capacity};

/// Pods a simulated node holds (kubelet's default).
pub const PODS_PER_NODE: usize = 110;
const NODES_READY: Duration = Duration::from_secs(900);

/// Adds simulated nodes for `pods` more Pods and waits until they are Ready; their
/// names. Each node has room for its 110 Pods at the catalog's largest default
/// requests (MySQL's and Tomcat's 100m and 256Mi): sized by Pods alone, the default
/// 4Gi node held 16 and the rest stayed Pending.
pub async fn add_capacity(client: &kube::Client, prefix: &str, pods: usize) -> Vec<String> {
    let count = pods.div_ceil(PODS_PER_NODE);
    let capacity = Capacity {
        cpu: "16".into(),
        memory: "32Gi".into(),
        pods: PODS_PER_NODE as u32,
    };
    let names = nodes::add(client, prefix, 0..count, &capacity)
        .await
        .expect("nodes");
    let api: Api<Node> = Api::all(client.clone());
    for name in &names {
        let ready = await_condition(api.clone(), name, |n: Option<&Node>| {
            n.and_then(|n| n.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        });
        tokio::time::timeout(NODES_READY, ready)
            .await
            .expect("node Ready in time")
            .expect("watching a node");
    }
    names
}
