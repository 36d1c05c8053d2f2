//! Resource usage (`POST /api/usage`) from the local cluster's metrics-server, which
//! measures the real node's containers through kubelet: a Pod that burns a core shows
//! about 1,000m, beside its request and limit, on its own, as one of a workload's Pods,
//! in its namespace's table and on its node; read as the person, who is refused in the
//! API server's words without rights to the metrics. Part of the `live_logs` area (one
//! real node for all).
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use portico_core::usage::{Usage, UsageReport, UsageTarget};
use serde_json::json;

use super::{IMAGE, START_WAIT, admin, token_mode_portal, until_running};

/// metrics-server measures every 15 s and needs two measurements of a new container:
/// the figure is there within a minute; a slow machine gets twice that.
const MEASURED_WAIT: Duration = Duration::from_secs(120);

/// A Pod `burn` (label `app=burn`) whose one container spins a shell loop: one core,
/// for 10 minutes at most (should the test stop before it stops the Pod).
async fn burning_pod(client: &kube::Client, ns: &str) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "burn", "labels": {"app": "burn"}},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "app", "image": IMAGE, "imagePullPolicy": "Never",
                "command": ["timeout", "600", "sh", "-c", "while :; do :; done"],
                "resources": {
                    "requests": {"cpu": "100m", "memory": "16Mi"},
                    "limits": {"cpu": "1500m", "memory": "64Mi"},
                },
            }],
        },
    }))
    .expect("pod");
    crate::kit::create_soon(&Api::namespaced(client.clone(), ns), &pod).await;
}

/// Asks Portico for `target`'s usage as the person whose session `cookie` is: the
/// status and the body.
async fn ask(origin: &str, cookie: &str, target: &UsageTarget) -> (u16, String) {
    let response = reqwest::Client::new()
        .post(format!("{origin}/api/usage"))
        .header("cookie", cookie)
        .json(&json!({ "target": target }))
        .send()
        .await
        .expect("Portico answers");
    let status = response.status().as_u16();
    (status, response.text().await.expect("a body"))
}

/// Asks until `target`'s report has a row `row` whose CPU is past `millicores`.
async fn until_burning(
    origin: &str,
    cookie: &str,
    target: &UsageTarget,
    row: &str,
    millicores: u64,
) -> UsageReport {
    let deadline = Instant::now() + MEASURED_WAIT;
    loop {
        let (status, body) = ask(origin, cookie, target).await;
        assert_eq!(status, 200, "{target:?}: {body}");
        let usage: Usage = serde_json::from_str(&body).expect("a usage");
        let Usage::Measured(report) = usage else {
            panic!("{target:?}: the metrics API is served here: {usage:?}");
        };
        if report
            .rows
            .iter()
            .any(|r| r.name == row && r.cpu.used >= millicores)
        {
            return report;
        }
        assert!(
            Instant::now() < deadline,
            "{target:?}: {row} never passed {millicores}m: {report:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_that_burns_a_core_shows_about_1000m_as_the_person_everywhere_it_is_shown() {
    // A core spinning starves the node's other heavy tests' streams: one at a time.
    let _heavy = crate::kit::REAL_NODE_HEAVY.lock().await;
    let admin = admin().await;
    let ns = crate::kit::fresh_namespace(&admin, "usage").await;
    burning_pod(&admin, &ns).await;
    let token = crate::kit::account_token(&admin, &ns, "ada").await;
    crate::kit::grant(
        &admin,
        &ns,
        "pods-ada",
        ("", "pods"),
        &["get", "list"],
        "ada",
    )
    .await;
    crate::kit::grant(
        &admin,
        &ns,
        "metrics-ada",
        ("metrics.k8s.io", "pods"),
        &["get", "list"],
        "ada",
    )
    .await;
    let (origin, _portal) = token_mode_portal(&admin, None).await;
    let cookie = crate::kit::sign_in(&origin, &token).await;
    tokio::time::timeout(START_WAIT, until_running(&admin, &ns, "burn", 0))
        .await
        .expect("the Pod runs");

    // Its container, beside what it asked for and its ceiling.
    let pod = UsageTarget::Pod {
        namespace: ns.clone(),
        name: "burn".into(),
    };
    let report = until_burning(&origin, &cookie, &pod, "app", 700).await;
    let app = &report.rows[0];
    assert_eq!(report.rows.len(), 1);
    assert!(app.cpu.used <= 1_300, "one shell loop is one core: {app:?}");
    assert_eq!(app.cpu.request, Some(100));
    assert_eq!(app.cpu.ceiling, Some(1_500));
    assert_eq!(app.memory.ceiling, Some(64 * 1024 * 1024));
    assert!(app.memory.used > 0, "{app:?}");
    assert!(report.measured_at.is_some());

    // As one of a workload's Pods (its selector), and in its namespace's table.
    let workload = UsageTarget::Workload {
        namespace: ns.clone(),
        selector: "app=burn".into(),
    };
    let report = until_burning(&origin, &cookie, &workload, "burn", 700).await;
    assert_eq!(report.rows[0].cpu.ceiling, Some(1_500));
    let table = UsageTarget::Table {
        namespace: Some(ns.clone()),
    };
    until_burning(&origin, &cookie, &table, &format!("{ns}/burn"), 700).await;

    // ada may not read nodes or their metrics: refused, in the API server's words.
    let node_name = Api::<Pod>::namespaced(admin.clone(), &ns)
        .get("burn")
        .await
        .expect("the Pod")
        .spec
        .and_then(|s| s.node_name)
        .expect("scheduled");
    let node = UsageTarget::Node {
        name: node_name.clone(),
    };
    let (status, body) = ask(&origin, &cookie, &node).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(&format!("read the usage of node {node_name}")),
        "{body}"
    );

    // Someone who may: the node carries the burning core, beside what it can allocate.
    let deadline = Instant::now() + MEASURED_WAIT;
    loop {
        let usage = portico_server::web::backend::usage::usage(&admin, &node)
            .await
            .expect("the node's usage");
        let Usage::Measured(report) = usage else {
            panic!("the metrics API is served here: {usage:?}");
        };
        let row = report.rows.first().expect("the node's row");
        assert_eq!(row.name, node_name);
        assert!(row.cpu.ceiling.is_some_and(|c| c >= 1_000), "{row:?}");
        assert!(row.memory.ceiling.is_some_and(|m| m > 0), "{row:?}");
        if row.cpu.used >= 700 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the node never carried the core: {row:?}"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    crate::kit::stop_pods(&admin, &ns).await;
    crate::kit::delete_namespace(&admin, &ns).await;
}
