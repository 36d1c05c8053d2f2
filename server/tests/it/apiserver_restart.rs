//! A live table survives kube-apiserver restarting: the feed re-watches (or relists)
//! by itself and its rows equal the API's list afterwards. Its own control plane,
//! since restarting a shared one would disturb other tests. And a cluster without a
//! metrics API (another plane of its own) is said to have none.
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use portico_control_plane::ControlPlane;
use portico_core::live::protocol::TableChange;
use portico_core::table::state::TableState;
use portico_core::table::wire::TableQuery;
use portico_server::live::feeds::hub::WatchHub;

const WAIT: Duration = Duration::from_secs(60);

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("ConfigMap")
}

#[tokio::test]
async fn a_live_table_recovers_after_the_api_server_restarts() {
    let mut plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .expect("join")
        .expect("control plane starts");
    let client = plane.admin_client().await.expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &config_map("before"))
        .await
        .expect("create");

    let hub = WatchHub::new(client.clone(), Duration::from_secs(1));
    let query = TableQuery {
        group: String::new(),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespace: Some("default".into()),
        label_selector: None,
        field_selector: None,
        columns: None,
    };
    let mut sub = hub.subscribe(query).expect("within the hub's limits");
    let mut state = TableState::default();
    let names = |s: &TableState| -> Vec<String> {
        s.view("", None, false, 0)
            .into_iter()
            .map(|r| r.name.clone())
            .collect()
    };
    let mut step = async |state: &mut TableState| {
        let update = tokio::time::timeout(WAIT, sub.next())
            .await
            .expect("message in time")
            .expect("the feed goes on");
        match update.change {
            TableChange::Snapshot(t) => *state = TableState::from_snapshot(t),
            TableChange::Delta(d) => state.apply(d),
            TableChange::Problem(p) | TableChange::Ended(p) => panic!("{p}"),
            TableChange::Partial(_) | TableChange::Rows { .. } => panic!("whole tables only"),
        }
    };
    while !names(&state).contains(&"before".to_string()) {
        step(&mut state).await;
    }

    plane = tokio::task::spawn_blocking(move || plane.restart_apiserver().map(|()| plane))
        .await
        .expect("join")
        .expect("kube-apiserver restarts");

    // A fresh client: the old one's connections died with the server.
    let api: Api<ConfigMap> =
        Api::namespaced(plane.admin_client().await.expect("client"), "default");
    api.create(&PostParams::default(), &config_map("after"))
        .await
        .expect("create after restart");
    while !names(&state).contains(&"after".to_string()) {
        step(&mut state).await;
    }
    let mut listed: Vec<String> = api
        .list_metadata(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    listed.sort();
    assert_eq!(
        names(&state),
        listed,
        "the live table equals the API's list"
    );
    drop(sub);
    drop(plane);
}

#[tokio::test]
async fn a_cluster_without_a_metrics_api_says_so_in_one_sentence() {
    use portico_core::usage::{Usage, UsageTarget};
    // A cluster of its own, with simulated nodes and no metrics-server (a shared one
    // may be an external cluster that serves metrics.k8s.io).
    let plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .expect("join")
        .expect("control plane starts");
    let client = plane.admin_client().await.expect("client");
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client.clone());
    let node = nodes
        .list(&Default::default())
        .await
        .expect("nodes")
        .items
        .into_iter()
        .find_map(|n| n.metadata.name)
        .expect("a simulated node");
    for target in [
        UsageTarget::Node { name: node },
        UsageTarget::Table { namespace: None },
    ] {
        let usage = portico_server::web::backend::usage::usage(&client, &target)
            .await
            .expect("an answer, not an error");
        let Usage::NotServed(why) = usage else {
            panic!("{target:?}: no metrics API here, yet {usage:?}");
        };
        assert!(
            why.contains("serves no metrics API (metrics.k8s.io)"),
            "{why}"
        );
    }
}
