//! Writes against a real kube-apiserver: dry runs store nothing, CEL failures come back
//! as causes on their fields, a stale resourceVersion is a conflict.
use std::path::PathBuf;

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_core::resource::ResourceRef;
use portico_server::web::backend::objects;

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

async fn client_with_crds() -> kube::Client {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let mut docs = apply::read_documents(&repo("deploy/crds/stack.yaml")).expect("Stack CRD");
    docs.extend(
        apply::read_documents(&repo("end2end/fixtures/seeds/000-crdkind-crd.yaml"))
            .expect("seed CRD"),
    );
    apply::apply_all(&client, docs).await.expect("CRDs apply");
    // Established is not yet served: discovery can lag the CRD's condition.
    let kind = kube::api::GroupVersionKind::gvk("iksoon.test.com", "v1", "CrdKind");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while kube::discovery::pinned_kind(&client, &kind).await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "CrdKind never appeared in discovery"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    client
}

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("object")
}

#[tokio::test]
async fn a_dry_run_stores_nothing() {
    let client = client_with_crds().await;
    let obj = crate::kit::crd_kind(
        serde_json::json!({"name": "dry-only", "namespace": "default"}),
        "tomcat",
        2,
    );
    let accepted = objects::create(&client, &crate::kit::kinds(&client).await, &obj, true)
        .await
        .expect("dry run accepted");
    assert_eq!(accepted.metadata.name.as_deref(), Some("dry-only"));
    let api: Api<DynamicObject> = crate::kit::crd_kinds(&client);
    assert!(api.get_opt("dry-only").await.expect("get").is_none());
}

#[tokio::test]
async fn a_cel_rule_failure_names_its_field() {
    let client = client_with_crds().await;
    let stack = object(serde_json::json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "tc", "namespace": "default"},
        "spec": {"choice": "tomcat", "storage": "1Gi"}
    }));
    let err = objects::create(&client, &crate::kit::kinds(&client).await, &stack, true)
        .await
        .expect_err("the CEL rule refuses it");
    let Some(r) = err.rejection().cloned() else {
        panic!("rejection expected, got {err:?}")
    };
    assert_eq!(r.code, 422);
    let cause = r
        .causes
        .iter()
        .find(|c| c.field == "spec.storage")
        .unwrap_or_else(|| panic!("{r:?}"));
    assert!(
        cause.message.contains("storage applies to mysql only"),
        "{cause:?}"
    );
}

#[tokio::test]
async fn a_stale_resource_version_is_a_conflict() {
    let client = client_with_crds().await;
    let resource = ResourceRef::new("iksoon.test.com", "v1", "crdplural");
    let api: Api<DynamicObject> = crate::kit::crd_kinds(&client);
    let created = api
        .create(
            &PostParams::default(),
            &crate::kit::crd_kind(
                serde_json::json!({"generateName": "contended-"}),
                "mysql",
                1,
            ),
        )
        .await
        .expect("create");
    let name = created.metadata.name.clone().expect("generated name");
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 5}})),
    )
    .await
    .expect("someone else writes");
    let mut mine = created.clone();
    mine.data["spec"]["replicas"] = serde_json::json!(3);
    let err = objects::replace(&client, &resource, Some("default"), &name, &mine, false)
        .await
        .expect_err("stale resourceVersion");
    let Some(r) = err.rejection().cloned() else {
        panic!("rejection expected, got {err:?}")
    };
    assert_eq!(r.code, 409, "{r:?}");
    let latest = objects::get(&client, &resource, Some("default"), &name)
        .await
        .expect("get");
    assert_eq!(
        latest.data["spec"]["replicas"], 5,
        "nothing of the stale write landed"
    );
    assert!(latest.metadata.managed_fields.is_none());
}

/// The hand-written real-world-sized CRD is a valid structural schema for the API
/// server, and its nested CEL rule's failure comes back on the nested field.
#[tokio::test]
async fn the_large_fixture_crd_is_served_and_its_nested_rules_name_their_fields() {
    let client = client_with_crds().await;
    let docs = apply::read_documents(&repo("end2end/fixtures/large/databasecluster-crd.yaml"))
        .expect("large CRD");
    apply::apply_all(&client, docs)
        .await
        .expect("large CRD applies");
    let db = |expose: serde_json::Value| {
        object(serde_json::json!({
            "apiVersion": "data.example.com/v1", "kind": "DatabaseCluster",
            "metadata": {"name": "db1", "namespace": "default"},
            "spec": {"engine": "mysql", "version": "8.4", "storage": {"size": "10Gi"},
                     "bootstrap": {"initdb": {"database": "app"}},
                     "backup": {"enabled": false},
                     "network": {"expose": expose}}
        }))
    };
    objects::create(
        &client,
        &crate::kit::kinds(&client).await,
        &db(serde_json::json!({"type": "NodePort", "nodePort": 30080})),
        true,
    )
    .await
    .expect("a valid DatabaseCluster passes a dry run");
    let err = objects::create(
        &client,
        &crate::kit::kinds(&client).await,
        &db(serde_json::json!({"type": "ClusterIP", "nodePort": 30080})),
        true,
    )
    .await
    .expect_err("nodePort with ClusterIP is refused");
    let Some(r) = err.rejection().cloned() else {
        panic!("rejection expected, got {err:?}")
    };
    let fields: Vec<_> = r.causes.iter().map(|c| c.field.as_str()).collect();
    assert!(
        fields.contains(&"spec.network.expose.nodePort"),
        "causes: {:?}",
        r.causes
    );
}
