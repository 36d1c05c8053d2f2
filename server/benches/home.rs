//! The home page for a person who reads many namespaces, beside the floor in the same
//! run. Run with `cargo bench -p server --bench home` (env BENCH_NAMESPACES, default
//! 50; BENCH_PODS, default 5,000, spread over them).
//!
//! A local cluster of simulated (KWOK) nodes holds BENCH_NAMESPACES namespaces, each
//! with its share of Running Pods and one Deployment whose 2 Pods cannot be placed
//! (so each namespace has a workload short of its replicas, Pods not ready and the
//! scheduler's Warning events). One person (a ServiceAccount) may list namespaces
//! and read those namespaces, not the cluster as a whole: Portico looks in each.
//!
//! - **the floor**: a bare client with the person's token lists, as Tables (what
//!   `kubectl get` asks for), the seven kinds the home page reads in every namespace,
//!   16 requests at a time: the least any tool must fetch to answer;
//! - **Portico, cold**: the person opens the home page's live view (`overview`) on a
//!   portal that follows nothing yet: time to the first summary (the page's first
//!   paint with content) and to the complete one (every list in);
//! - **Portico, warm**: the same person in a second tab while the first is open (the
//!   feeds shared): time to the complete summary;
//! - the portal's memory growth (its process, in-process here) across both.
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use portico_control_plane::{ControlPlane, apply};
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic};
use portico_core::overview::{Overview, OverviewQuery, Watched};
use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use serde_json::json;

const PEOPLE: &str = "people";
const PERSON: &str = "ada";
const IN_FLIGHT: usize = 16;
const DEADLINE: Duration = Duration::from_secs(300);

fn namespace(i: usize) -> String {
    format!("team-{i:03}")
}

/// A Pod placed on a simulated node: KWOK reports it Running and Ready.
fn placed_pod(name: &str, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": "filler"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "filler"}]},
    }))
    .unwrap()
}

/// A Deployment whose Pods no node takes: short of its replicas, its Pods Pending and
/// the scheduler saying so in Warning events.
fn unplaceable() -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "stuck"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "stuck"}},
            "template": {
                "metadata": {"labels": {"app": "stuck"}},
                "spec": {"nodeSelector": {"no-such-node": "true"},
                         "containers": [{"name": "app", "image": "stuck"}]},
            },
        },
    }))
    .unwrap()
}

async fn cluster(namespaces: usize, pods: usize) -> (ControlPlane, kube::Client, String) {
    let plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .unwrap()
        .expect("control plane");
    let admin = plane.admin_client().await.expect("client");
    let started = Instant::now();
    let node_names = kit::nodes::add_capacity(&admin, "bench-home", pods).await;
    println!(
        "{} simulated nodes for {pods} Pods in {:.1} s",
        node_names.len(),
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    kit::create_namespace(&admin, PEOPLE).await;
    let reader = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "home-reader"},
        "rules": [
            {"apiGroups": ["", "apps", "portico.dev"],
             "resources": ["pods", "events", "deployments", "statefulsets", "daemonsets", "stacks", "stackbindings"],
             "verbs": ["get", "list", "watch"]}]});
    let lister = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "namespace-lister"},
        "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]});
    let listing = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "ada-lists-namespaces"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "namespace-lister"},
        "subjects": [{"kind": "ServiceAccount", "name": PERSON, "namespace": PEOPLE}]});
    apply::apply_all(
        &admin,
        [reader, lister, listing]
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect(),
    )
    .await
    .expect("RBAC applies");
    let per_namespace = pods / namespaces;
    futures::stream::iter(0..namespaces)
        .for_each_concurrent(4, |i| {
            let (admin, node_names) = (admin.clone(), &node_names);
            async move {
                let ns = namespace(i);
                kit::create_namespace(&admin, &ns).await;
                let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "ada-reads", "namespace": ns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "home-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": PERSON, "namespace": PEOPLE}]});
                apply::apply_all(&admin, vec![serde_json::from_value(binding).unwrap()])
                    .await
                    .expect("binding applies");
                let deployments: Api<Deployment> = Api::namespaced(admin.clone(), &ns);
                deployments
                    .create(&PostParams::default(), &unplaceable())
                    .await
                    .expect("deployment");
                let api: Api<Pod> = Api::namespaced(admin.clone(), &ns);
                futures::stream::iter(0..per_namespace)
                    .for_each_concurrent(8, |p| {
                        let api = api.clone();
                        let node = &node_names[(i * per_namespace + p) % node_names.len()];
                        async move {
                            api.create(&PostParams::default(), &placed_pod(&format!("p-{p:04}"), node))
                                .await
                                .expect("pod");
                        }
                    })
                    .await;
            }
        })
        .await;
    println!(
        "{namespaces} namespaces, {} Pods placed and {} Deployments of 2 unplaceable, RBAC, in {:.1} s",
        per_namespace * namespaces,
        namespaces,
        started.elapsed().as_secs_f64()
    );
    let token = kit::account_token(&admin, PEOPLE, PERSON).await;
    kit::until_subject_may(
        &admin,
        (&kit::account_user(PEOPLE, PERSON), &[]),
        "watch",
        ("apps", "daemonsets"),
        Some(&namespace(namespaces - 1)),
    )
    .await;
    (plane, admin, token)
}

/// The floor: the person's bare client lists every kind in every namespace as Tables.
async fn floor(plane: &ControlPlane, token: &str, namespaces: usize) -> (Duration, usize) {
    let client = kit::client_as(plane.admin_kubeconfig(), token).await;
    let started = Instant::now();
    let requests: Vec<(Watched, String)> = (0..namespaces)
        .flat_map(|i| Watched::ALL.map(|w| (w, namespace(i))))
        .collect();
    let rows: usize = futures::stream::iter(requests)
        .map(|(watched, ns)| {
            let client = client.clone();
            async move {
                let resource = watched.resource();
                let query = portico_core::table::wire::TableQuery {
                    group: resource.group,
                    version: resource.version,
                    plural: resource.plural,
                    namespace: Some(ns),
                    label_selector: None,
                    field_selector: watched.field_selector().map(str::to_string),
                    columns: None,
                };
                // Stacks' CRD is not installed here: a 404, as Portico gets.
                portico_server::live::upstream::table_api::list(
                    &client, &query, 100_000, None, None,
                )
                .await
                .map_or(0, |page| page.table.rows.len())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .fold(0, |sum, n| async move { sum + n })
        .await;
    (started.elapsed(), rows)
}

/// Opens the home page's live view as the signed-in person: the time to its first
/// summary and to its complete one, and the complete one.
async fn open_home(
    origin: &str,
    cookie: &str,
) -> (Duration, Duration, Overview, kit::socket::Socket) {
    let started = Instant::now();
    let mut socket = kit::socket::connect(origin, kit::socket::LIVE, Some(cookie), None).await;
    let subscribe = ClientMessage::Subscribe {
        id: 1,
        topic: Topic::Overview {
            query: OverviewQuery::default(),
        },
        resume: None,
    };
    kit::socket::send_json(&mut socket, &subscribe).await;
    let mut first = None;
    loop {
        let message = kit::socket::next_json::<ServerMessage>(&mut socket, DEADLINE)
            .await
            .expect("the socket stays open");
        match message {
            ServerMessage::Overview { overview, .. } => {
                let at = started.elapsed();
                let first = *first.get_or_insert(at);
                if overview.complete {
                    return (first, at, overview, socket);
                }
            }
            ServerMessage::Refused { message, .. } => panic!("refused: {message}"),
            _ => {}
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main]
async fn main() {
    let namespaces = kit::env_or("BENCH_NAMESPACES", 50);
    let pods = kit::env_or("BENCH_PODS", 5000);
    let (plane, admin, token) = cluster(namespaces, pods).await;
    // Let the scheduler say its piece, and KWOK mark every Pod Running.
    let pods_api: Api<Pod> = Api::all(admin.clone());
    let deadline = Instant::now() + DEADLINE;
    loop {
        let list = pods_api.list(&Default::default()).await.unwrap();
        let running = list
            .items
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count();
        if running >= pods / namespaces * namespaces {
            break;
        }
        assert!(Instant::now() < deadline, "only {running} Pods ran");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    let (took, rows) = floor(&plane, &token, namespaces).await;
    println!(
        "floor (bare client as the person, {} Table lists, {IN_FLIGHT} at a time): {} for {rows} rows",
        namespaces * Watched::ALL.len(),
        ms(took)
    );

    let identity = IdentityConfig {
        mode: IdentityMode::Token,
        sessions: Some(SessionKey::random().unwrap()),
        ..IdentityConfig::local()
    };
    let config = portico_server::cluster::config::config(Some(plane.admin_kubeconfig()), None)
        .await
        .unwrap();
    let before = kit::rss_mb(std::process::id(), "VmRSS:");
    let (origin, _portal) = kit::serve_limited(&admin, Some((identity, config)), None).await;
    let cookie = kit::sign_in(&origin, &token).await;
    let (first, complete, overview, _cold) = open_home(&origin, &cookie).await;
    println!(
        "Portico, cold: first summary {}, complete {} ({} Pods and {} workloads looked at; {} Pods, {} workloads and {} objects with warnings shown; unseen: {:?})",
        ms(first),
        ms(complete),
        overview.pods_seen,
        overview.workloads_seen,
        overview.pods.items.len() + overview.pods.more,
        overview.workloads.items.len() + overview.workloads.more,
        overview.warnings.len() + overview.warnings_more,
        overview.unseen,
    );
    let (_, warm, _, _warm) = open_home(&origin, &cookie).await;
    println!("Portico, warm (a second tab): complete {}", ms(warm));
    let after = kit::rss_mb(std::process::id(), "VmRSS:");
    println!(
        "memory: the benchmark's process (Portico in it) grew {:.1} MB serving both",
        after - before
    );
}
