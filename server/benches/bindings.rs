//! Benchmark of StackBindings on a small real cluster (kube-apiserver, the real
//! controller-manager and scheduler, KWOK's simulated nodes). Prints its figures; run
//! with `cargo bench -p server --bench bindings` (env BENCH_BINDINGS changes the count).
//!
//! N Deployments of someone's own and one MySQL Stack. The floor: a bare client puts
//! the same variables into each Deployment itself (one server-side apply each, 16 in
//! flight). Portico: N StackBindings are created, 16 in flight, and the reconciler puts
//! them in. Both are timed from the first request until every Deployment's Pod
//! template has the variables (seen through a watch), with each Deployment's own delay.
//! Then every binding is deleted, and timed until every Deployment has none again.
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use portico_control_plane::{ControlPlane, cluster::portico_crds};
use portico_server::reconcile::binding::kind::StackBinding;
use portico_server::reconcile::binding::projection;
use portico_server::reconcile::catalog::{Catalog, LiveCatalog};
use portico_server::reconcile::controller::{CONCURRENCY, ReconcileStats, Settings};
use portico_server::reconcile::leader::LeaseSettings;
use portico_server::reconcile::run_elected;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

const IN_FLIGHT: usize = 16;

async fn deployments(client: &kube::Client, ns: &str, count: usize) {
    let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
    futures::stream::iter(0..count)
        .for_each_concurrent(IN_FLIGHT, |i| {
            let api = api.clone();
            async move {
                let name = format!("app-{i}");
                // Accepting the binding's MYSQL_ variables, as the Bind button has it do.
                let d: Deployment = serde_json::from_value(json!({
                    "metadata": {"name": name,
                        "annotations": {projection::ACCEPTED_PREFIXES: "MYSQL_"}},
                    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}}}}))
                .unwrap();
                api.create(&PostParams::default(), &d).await.unwrap();
            }
        })
        .await;
}

fn has_variables(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.as_ref())
        .is_some_and(|env| env.iter().any(|e| e.name == "MYSQL_URL"))
}

/// Watches the namespace's Deployments until `done` holds for all `count` of them;
/// the time each first did, after `start`.
async fn until_all(
    client: kube::Client,
    ns: &'static str,
    count: usize,
    done: fn(&Deployment) -> bool,
    start: Arc<Mutex<Option<Instant>>>,
) -> Vec<Duration> {
    let api: Api<Deployment> = Api::namespaced(client, ns);
    let mut seen: HashMap<String, Duration> = HashMap::new();
    let mut events = watcher(api, watcher::Config::default())
        .applied_objects()
        .boxed();
    while seen.len() < count {
        let d = events.try_next().await.unwrap().expect("the watch goes on");
        let Some(start) = *start.lock().unwrap() else {
            continue;
        };
        if done(&d) {
            seen.entry(d.name_any()).or_insert_with(|| start.elapsed());
        }
    }
    seen.into_values().collect()
}

fn summary(label: &str, mut each: Vec<Duration>, total: Duration) {
    each.sort();
    let at = |q: f64| each[((each.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    println!(
        "| {label} | {} | {:.0} | {:.0} | {:.0} | {:.2} |",
        each.len(),
        at(0.5),
        at(0.99),
        at(1.0),
        total.as_secs_f64()
    );
}

/// Times `requests` from their start until `done` holds for every one of the `count`
/// Deployments of `ns` (seen through a watch), and prints the row `label`.
async fn timed_row(
    client: &kube::Client,
    ns: &'static str,
    count: usize,
    done: fn(&Deployment) -> bool,
    label: &str,
    requests: impl Future<Output = ()>,
) {
    let start = Arc::new(Mutex::new(None));
    let watching = tokio::spawn(until_all(client.clone(), ns, count, done, start.clone()));
    // The watch has listed before the clock starts (its first events are the list).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let began = Instant::now();
    *start.lock().unwrap() = Some(began);
    requests.await;
    summary(label, watching.await.unwrap(), began.elapsed());
}

/// The floor: in a namespace of its own, a bare client applies to each Deployment the
/// variables a binding would.
async fn floor(client: &kube::Client, count: usize) {
    let floor_ns = "floor";
    kit::create_namespace(client, floor_ns).await;
    deployments(client, floor_ns, count).await;
    let stack: Stack = serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": floor_ns},
        "spec": {"choice": "mysql"},
        "status": {"credentialsSecret": "db-credentials",
            "endpoint": {"service": "db", "port": 3306, "user": "app", "adminUser": "root", "database": "app", "scheme": "mysql"}}
    }))
    .unwrap();
    let env = projection::variables("MYSQL_", &projection::details(&stack).unwrap());
    let api: Api<Deployment> = Api::namespaced(client.clone(), floor_ns);
    let applies = futures::stream::iter(0..count).for_each_concurrent(IN_FLIGHT, |i| {
        let (api, env) = (api.clone(), env.clone());
        async move {
            let name = format!("app-{i}");
            let target = projection::Target::parse(&format!("Deployment/{name}")).unwrap();
            let body = projection::bind(&target, &["app".into()], &env);
            api.patch(&name, &PatchParams::apply("floor"), &Patch::Apply(&body))
                .await
                .unwrap();
        }
    });
    timed_row(
        client,
        floor_ns,
        count,
        has_variables,
        "floor: bare client applies",
        applies,
    )
    .await;
}

/// Portico's reconciler, scoped to `ns`, and the MySQL Stack `db` there once it has
/// its endpoint (which bindings need): the reconciler's task and its stop switch.
async fn start_reconciler(
    client: &kube::Client,
    catalog: Catalog,
    ns: &'static str,
) -> (
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
) {
    let (stop, shutdown) = tokio::sync::watch::channel(false);
    let settings = Settings {
        catalog: LiveCatalog::fixed(catalog),
        namespace: Some(ns.into()),
        stats: Arc::new(ReconcileStats::default()),
        metrics: Arc::default(),
        concurrency: CONCURRENCY,
    };
    let reconciler = tokio::spawn(run_elected(
        client.clone(),
        settings,
        LeaseSettings::new(ns, "bench"),
        shutdown,
    ));
    let stacks: Api<Stack> = Api::namespaced(client.clone(), ns);
    let db: Stack = serde_json::from_value(json!({
        "metadata": {"name": "db"}, "spec": {"choice": "mysql"}}))
    .unwrap();
    stacks.create(&PostParams::default(), &db).await.unwrap();
    // Bindings need the Stack's endpoint: wait for it before the clock starts.
    kube::runtime::wait::await_condition(stacks.clone(), "db", |s: Option<&Stack>| {
        s.and_then(|s| s.status.as_ref())
            .is_some_and(|s| s.endpoint.is_some())
    })
    .await
    .unwrap();
    (stop, reconciler)
}

/// Portico: in a namespace of its own, StackBindings carried out by the reconciler,
/// then every one of them deleted again.
async fn portico(client: &kube::Client, catalog: Catalog, count: usize) {
    let ns = "portico";
    kit::create_namespace(client, ns).await;
    deployments(client, ns, count).await;
    let (stop, reconciler) = start_reconciler(client, catalog, ns).await;
    let bindings: Api<StackBinding> = Api::namespaced(client.clone(), ns);
    let creates = futures::stream::iter(0..count).for_each_concurrent(IN_FLIGHT, |i| {
        let bindings = bindings.clone();
        async move {
            let b: StackBinding = serde_json::from_value(json!({
                "apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
                "metadata": {"name": format!("bind-{i}")},
                "spec": {"stack": "db", "workload": {"kind": "Deployment", "name": format!("app-{i}")}}}))
            .unwrap();
            bindings.create(&PostParams::default(), &b).await.unwrap();
        }
    });
    timed_row(
        client,
        ns,
        count,
        has_variables,
        "Portico: StackBindings",
        creates,
    )
    .await;

    // Unbinding: every binding deleted; until no Deployment has the variables.
    let deletes = futures::stream::iter(0..count).for_each_concurrent(IN_FLIGHT, |i| {
        let bindings = bindings.clone();
        async move {
            bindings
                .delete(&format!("bind-{i}"), &DeleteParams::default())
                .await
                .unwrap();
        }
    });
    timed_row(
        client,
        ns,
        count,
        |d| !has_variables(d),
        "Portico: unbinding",
        deletes,
    )
    .await;
    stop.send_replace(true);
    reconciler.await.unwrap();
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("BENCH_BINDINGS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let crds = portico_crds().expect("deploy/crds");
    let plane = tokio::task::spawn_blocking(move || ControlPlane::start_with(crds))
        .await
        .unwrap()
        .expect("cluster");
    let client = plane.admin_client().await.unwrap();
    let catalog = Catalog::load(None).unwrap();
    println!(
        "{count} Deployments, one MySQL Stack, {IN_FLIGHT} requests in flight; milliseconds from the first request"
    );
    println!();
    println!("| path | Deployments | p50 ms | p99 ms | last ms | all done, s |");
    println!("|---|---|---|---|---|---|");
    floor(&client, count).await;
    portico(&client, catalog, count).await;
}
