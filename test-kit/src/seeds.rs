//! The seed CRD `CrdKind` (`iksoon.test.com/v1`, seed 000 of `end2end/fixtures/seeds`),
//! the one fixture builder for it: a control plane with it applied, its resource, the
//! API over its objects, and one object as the tests and the benchmarks create them.

use kube::api::{Api, DynamicObject};
use kube::discovery::ApiResource;

/// A control plane of its own (a benchmark's) with the seed CRD `CrdKind` applied,
/// and its admin client.
pub async fn plane_with_crd_kind() -> (portico_control_plane::ControlPlane, kube::Client) {
    let plane = tokio::task::spawn_blocking(portico_control_plane::ControlPlane::start)
        .await
        .expect("join")
        .expect("control plane");
    let admin = plane.admin_client().await.expect("client");
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/fixtures/seeds/000-crdkind-crd.yaml");
    portico_control_plane::apply::apply_all(
        &admin,
        portico_control_plane::apply::read_documents(&seeds).expect("CRD"),
    )
    .await
    .expect("CRD applies");
    (plane, admin)
}

/// The seed CRD's resource: `CrdKind`, `iksoon.test.com/v1`, plural `crdplural`.
pub fn crd_kind_resource() -> ApiResource {
    ApiResource {
        group: "iksoon.test.com".into(),
        version: "v1".into(),
        api_version: "iksoon.test.com/v1".into(),
        kind: "CrdKind".into(),
        plural: "crdplural".into(),
    }
}

/// The seed CRD's objects (`CrdKind`, `iksoon.test.com/v1`) in `default`.
pub fn crd_kinds(client: &kube::Client) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), "default", &crd_kind_resource())
}

/// One `CrdKind` asking for `choice` (`mysql` or `tomcat`) with `replicas`, its
/// `metadata` as the caller needs it: `{"name": …}`, with labels or a namespace, or a
/// `generateName`.
pub fn crd_kind(metadata: serde_json::Value, choice: &str, replicas: u32) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "iksoon.test.com/v1", "kind": "CrdKind",
        "metadata": metadata,
        "spec": {"choice": choice, "replicas": replicas}
    }))
    .expect("a CrdKind")
}
