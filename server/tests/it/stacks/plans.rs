//! Plans and versions: a plan sizes a Stack, a new plan or version rolls its Pods and
//! keeps its volume, and a downgrade the catalog forbids is refused.
use crate::kit::stacks::*;

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::Api;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// The first container of StatefulSet `name`: (image, requests, limits) as text, and its
/// claim template's storage.
async fn sized(client: &kube::Client, ns: &str, name: &str) -> (String, String, String, String) {
    let set = Api::<StatefulSet>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("StatefulSet");
    let spec = set.spec.expect("spec");
    let container = spec.template.spec.expect("pod").containers.remove(0);
    let text = |map: Option<
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    >| {
        map.unwrap_or_default()
            .into_iter()
            .map(|(k, v)| format!("{k}={}", v.0))
            .collect::<Vec<_>>()
            .join(",")
    };
    let resources = container.resources.unwrap_or_default();
    let storage = spec.volume_claim_templates.unwrap_or_default()[0]
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .map(|r| r["storage"].0.clone())
        .unwrap_or_default();
    (
        container.image.unwrap_or_default(),
        text(resources.requests),
        text(resources.limits),
        storage,
    )
}

#[tokio::test]
async fn a_plan_sizes_a_stack_and_a_new_plan_rolls_its_pods_and_keeps_its_volume() {
    let (client, ns, reconciler) = one_reconciler("stk-plan").await;
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "plan": "medium"}),
    )
    .await;
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    let (_, requests, limits, storage) = sized(&client, &ns, "db").await;
    assert_eq!(
        (requests.as_str(), limits.as_str(), storage.as_str()),
        ("cpu=500m,memory=1Gi", "cpu=2,memory=4Gi", "10Gi")
    );
    // A bigger plan: the Pods get its resources; the volume keeps the size it was made
    // with (the API server refuses a change to a claim template).
    edit_stack(&client, &ns, "db", json!({"plan": "large"})).await;
    until::<StatefulSet>(&client, &ns, "db", "the large plan's requests", |s| {
        s.and_then(|s| s.spec.as_ref())
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.containers.first())
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .is_some_and(|r| r.get("cpu").map(|q| q.0.as_str()) == Some("1"))
    })
    .await;
    let (_, _, limits, storage) = sized(&client, &ns, "db").await;
    assert_eq!(
        (limits.as_str(), storage.as_str()),
        ("cpu=4,memory=8Gi", "10Gi")
    );
    until::<Stack>(&client, &ns, "db", "Ready on the large plan", |s| {
        ready_with(s, 1)
    })
    .await;
    // A plan the catalog does not offer: said, with the plans it does.
    edit_stack(&client, &ns, "db", json!({"plan": "huge"})).await;
    let refused = degraded(&client, &ns, "db").await;
    assert_eq!(refused.reason, "UnknownPlan");
    assert_eq!(
        refused.message,
        "the catalog offers no plan \"huge\" of mysql; offered: small, medium, large"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn an_upgrade_rolls_the_statefulset_and_a_downgrade_the_catalog_forbids_is_refused() {
    let (client, ns, reconciler) = one_reconciler("stk-upgrade").await;
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "version": "8.0"}),
    )
    .await;
    until::<Stack>(&client, &ns, "db", "Ready on 8.0", |s| {
        ready_with(s, 1)
            && s.and_then(|s| s.status.as_ref())
                .and_then(|s| s.version.as_deref())
                == Some("8.0")
    })
    .await;
    edit_stack(&client, &ns, "db", json!({"version": "8.4"})).await;
    until::<Stack>(&client, &ns, "db", "Ready on 8.4", |s| {
        ready_with(s, 1)
            && s.and_then(|s| s.status.as_ref())
                .and_then(|s| s.version.as_deref())
                == Some("8.4")
    })
    .await;
    assert_eq!(
        sized(&client, &ns, "db").await.0,
        "docker.io/library/mysql:8.4"
    );

    // Back to 8.0: MySQL's upgraded files cannot be read by 8.0, so the catalog says no.
    edit_stack(&client, &ns, "db", json!({"version": "8.0"})).await;
    let refused = degraded(&client, &ns, "db").await;
    assert_eq!(refused.reason, "DowngradeRefused");
    assert!(
        refused
            .message
            .starts_with("mysql 8.4 cannot go back to 8.0: "),
        "{}",
        refused.message
    );
    assert_eq!(
        sized(&client, &ns, "db").await.0,
        "docker.io/library/mysql:8.4",
        "8.4 keeps running"
    );
    let stack = Api::<Stack>::namespaced(client.clone(), &ns)
        .get("db")
        .await
        .expect("Stack");
    assert_eq!(stack.status.and_then(|s| s.version).as_deref(), Some("8.4"));

    // Tomcat may go back.
    create_stack(
        &client,
        &ns,
        "web",
        json!({"choice": "tomcat", "version": "11.0"}),
    )
    .await;
    until::<Stack>(&client, &ns, "web", "Ready on 11.0", |s| ready_with(s, 1)).await;
    edit_stack(&client, &ns, "web", json!({"version": "10.1"})).await;
    until::<Stack>(&client, &ns, "web", "Ready on 10.1", |s| {
        ready_with(s, 1)
            && s.and_then(|s| s.status.as_ref())
                .and_then(|s| s.version.as_deref())
                == Some("10.1")
    })
    .await;
    reconciler.shut_down().await;
}
