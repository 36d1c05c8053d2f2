//! Create-to-Ready on the local cluster's real node: how long a person waits between
//! Create and a Stack that really serves (MariaDB accepting connections, Tomcat
//! answering HTTP), against the floor of the same children created by a bare client
//! (no Portico: the workload, Service and Secret `desired::desired` makes, applied
//! directly). Also what the real node costs: its start (with the images imported into
//! a fresh containerd) and its memory. Prints its figures; run with
//! `cargo bench -p server --bench real_stacks` (as root; BENCH_ROUNDS, default 3).
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use portico_control_plane::{ControlPlane, Nodes, StartOptions, cluster::portico_crds};
use portico_server::reconcile::catalog::{Catalog, LiveCatalog};
use portico_server::reconcile::controller::{CONCURRENCY, ReconcileStats, Settings};
use portico_server::reconcile::desired::{self, Workload};
use portico_server::reconcile::leader::LeaseSettings;
use portico_server::reconcile::run_elected;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(300);

fn local_catalog() -> Catalog {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/overlays/local/stacks.yaml");
    Catalog::load(Some(&path)).expect("the local catalog")
}

/// Waits until the workload `name` in `ns` has one ready replica.
async fn workload_ready(client: &kube::Client, ns: &str, name: &str, stateful: bool) {
    let wait = async {
        if stateful {
            let api: Api<StatefulSet> = Api::namespaced(client.clone(), ns);
            await_condition(api, name, |s: Option<&StatefulSet>| {
                s.and_then(|s| s.status.as_ref()?.ready_replicas) == Some(1)
            })
            .await
            .map(drop)
        } else {
            let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
            await_condition(api, name, |d: Option<&Deployment>| {
                d.and_then(|d| d.status.as_ref()?.ready_replicas) == Some(1)
            })
            .await
            .map(drop)
        }
    };
    tokio::time::timeout(DEADLINE, wait)
        .await
        .expect("ready in time")
        .expect("watch");
}

/// The floor: the Stack's children, created by a bare client, to a ready workload.
async fn floor(client: &kube::Client, catalog: &Catalog, ns: &str, choice: &str) -> Duration {
    let stack: Stack = serde_json::from_value(json!({
        "metadata": {"name": "floor", "namespace": ns, "uid": "floor"},
        "spec": {"choice": choice},
    }))
    .unwrap();
    let entry = catalog.get(choice).expect("entry");
    let mut c = desired::desired(
        &stack,
        entry,
        desired::Passwords::placeholder("floor-password"),
    )
    .expect("children");
    // No owner: the garbage collector would remove children of a Stack that is not.
    c.secret
        .iter_mut()
        .for_each(|s| s.metadata.owner_references = None);
    c.headless
        .iter_mut()
        .for_each(|s| s.metadata.owner_references = None);
    c.service.metadata.owner_references = None;
    let post = PostParams::default();
    let started = Instant::now();
    if let Some(secret) = &c.secret {
        Api::<Secret>::namespaced(client.clone(), ns)
            .create(&post, secret)
            .await
            .unwrap();
    }
    for service in c.headless.iter().chain([&c.service]) {
        Api::<Service>::namespaced(client.clone(), ns)
            .create(&post, service)
            .await
            .unwrap();
    }
    let stateful = match &mut c.workload {
        Workload::Stateful(set) => {
            set.metadata.owner_references = None;
            Api::<StatefulSet>::namespaced(client.clone(), ns)
                .create(&post, set)
                .await
                .unwrap();
            true
        }
        Workload::Stateless(d) => {
            d.metadata.owner_references = None;
            Api::<Deployment>::namespaced(client.clone(), ns)
                .create(&post, d)
                .await
                .unwrap();
            false
        }
    };
    workload_ready(client, ns, "floor", stateful).await;
    started.elapsed()
}

/// Portico: a Stack created as the browser form does, to its status saying Ready.
async fn portico(client: &kube::Client, ns: &str, choice: &str) -> Duration {
    let api: Api<Stack> = Api::namespaced(client.clone(), ns);
    let stack: Stack = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "stack"}, "spec": {"choice": choice},
    }))
    .unwrap();
    let started = Instant::now();
    api.create(&PostParams::default(), &stack).await.unwrap();
    let ready =
        |s: Option<&Stack>| s.and_then(|s| s.status.as_ref()?.phase.as_deref()) == Some("Ready");
    tokio::time::timeout(DEADLINE, await_condition(api, "stack", ready))
        .await
        .expect("Ready in time")
        .expect("watch");
    started.elapsed()
}

/// Resident memory of the real node's processes (everything in its PID namespace:
/// containerd, kubelet, kube-proxy, CoreDNS, shims and the containers), in MiB.
fn node_rss_mib(plane: &ControlPlane) -> (f64, f64) {
    let node = plane.real_node().expect("a real node");
    let init = node.sandbox().init_pid();
    let ns_of = |pid: &str| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    let target = ns_of(&init.to_string());
    let (mut agents, mut all) = (0u64, 0u64);
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if pid.parse::<u32>().is_err() || ns_of(&pid) != target {
            continue;
        }
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let rss_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let comm = comm.trim();
        // The node's agents; shims ("containerd-shim") and containers count in `all`.
        if comm == "containerd"
            || ["kubelet", "kube-proxy", "coredns"]
                .iter()
                .any(|p| comm.starts_with(p))
        {
            agents += rss_kib;
        }
        all += rss_kib;
    }
    (agents as f64 / 1024.0, all as f64 / 1024.0)
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let started = Instant::now();
    let plane = tokio::task::spawn_blocking(|| {
        ControlPlane::start_opts(StartOptions {
            objects: portico_crds().expect("CRDs"),
            nodes: Nodes::Real,
            ..StartOptions::default()
        })
    })
    .await
    .unwrap()
    .expect("a cluster with a real node");
    let start = started.elapsed();
    let client = plane.admin_client().await.unwrap();
    let (idle_agents, idle_all) = node_rss_mib(&plane);
    println!(
        "real node: cluster start with the images imported into a fresh containerd {:.1} s; node memory idle {idle_agents:.0} MiB (agents) / {idle_all:.0} MiB (all)",
        start.as_secs_f64()
    );
    let catalog = local_catalog();
    println!("| choice | round | floor (bare client) s | Portico (Create to Ready) s | ratio |");
    println!("|---|---|---|---|---|");
    for choice in ["tomcat", "mysql"] {
        for round in 0..rounds {
            let floor_ns = format!("floor-{choice}-{round}");
            kit::create_namespace(&client, &floor_ns).await;
            let floor = floor(&client, &catalog, &floor_ns, choice).await;

            let ns = format!("portico-{choice}-{round}");
            kit::create_namespace(&client, &ns).await;
            let (stop, shutdown) = tokio::sync::watch::channel(false);
            let settings = Settings {
                catalog: LiveCatalog::fixed(catalog.clone()),
                namespace: Some(ns.clone()),
                stats: Arc::new(ReconcileStats::default()),
                metrics: Arc::default(),
                concurrency: CONCURRENCY,
            };
            let reconciler = tokio::spawn(run_elected(
                client.clone(),
                settings,
                LeaseSettings::new(&ns, "bench"),
                shutdown,
            ));
            let ours = portico(&client, &ns, choice).await;
            println!(
                "| {choice} | {round} | {:.1} | {:.1} | {:.2} |",
                floor.as_secs_f64(),
                ours.as_secs_f64(),
                ours.as_secs_f64() / floor.as_secs_f64()
            );
            stop.send_replace(true);
            reconciler.await.unwrap();
            for ns in [floor_ns, ns] {
                Api::<Namespace>::all(client.clone())
                    .delete(&ns, &DeleteParams::default())
                    .await
                    .unwrap();
            }
        }
    }
    let (agents, all) = node_rss_mib(&plane);
    println!("node memory at the end: {agents:.0} MiB (agents) / {all:.0} MiB (all)");
}
