//! Benchmark of the Stack reconciler on a small real cluster (kube-apiserver, the
//! real controller-manager and scheduler, KWOK's simulated nodes), against the real
//! `portico` binary (`--reconciler only`). Prints its figures; run with
//! `cargo bench -p server --bench stacks` (env BENCH_STACKS changes the count;
//! BENCH_CHOICE=tomcat or mysql makes every Stack that choice, instead of half each).
//!
//! First the floor, on the same cluster: a bare client creates one Deployment and one
//! Service per request, 16 requests in flight; measured until every request has its
//! children, and until every Deployment is available. Then Portico: N Stacks (half
//! MySQL, half Tomcat) are created, 16 in flight; measured until every Stack has its
//! workload and Service, and until every Stack reports Ready (its Pods placed by the
//! scheduler and Ready on simulated nodes; nothing plays a controller's part). The
//! ratios compare the two.
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

#[path = "../tests/it/kit/mod.rs"]
mod kit;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Secret, Service};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use portico_control_plane::nodes::{self, Capacity};
use portico_control_plane::{ControlPlane, cluster::portico_crds};
use portico_server::reconcile::catalog::{Catalog, DEFAULT_CATALOG};
use portico_server::reconcile::desired::{self, Children, Workload};
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// Requests in flight, for the floor and for creating the Stacks alike.
const IN_FLIGHT: usize = 16;
/// Pods a simulated node holds (kubelet's default).
const PODS_PER_NODE: usize = 110;
const DEADLINE: Duration = Duration::from_secs(900);

/// Adds simulated nodes for `pods` more Pods and waits until they are Ready. Each
/// node has room for its 110 Pods at the catalog's largest default requests (MySQL's
/// and Tomcat's 100m and 256Mi): sized by Pods alone, the default 4Gi node held 16
/// and the rest stayed Pending.
async fn add_capacity(client: &kube::Client, prefix: &str, pods: usize) {
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
    for name in names {
        let ready = await_condition(api.clone(), &name, |n: Option<&Node>| {
            n.and_then(|n| n.status.as_ref())
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        });
        tokio::time::timeout(DEADLINE, ready)
            .await
            .expect("node Ready in time")
            .expect("watching a node");
    }
}

struct Floor {
    children: Duration,
    available: Duration,
}

/// The bare client: per request, the very children the reconciler would apply for the
/// same Stack (computed by the same code, without ownerReferences: there is no Stack
/// to own them), created in the same order, `IN_FLIGHT` requests at a time.
async fn floor(
    client: &kube::Client,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> Floor {
    let ns = "floor";
    kit::create_namespace(client, ns).await;
    let catalog = Catalog::parse(DEFAULT_CATALOG).expect("the shipped catalog");
    let requests: Vec<Children> = (0..count)
        .map(|i| {
            let stack: Stack = serde_json::from_value(json!({
                "metadata": {"name": format!("f-{i:04}"), "namespace": ns, "uid": format!("floor-{i}")},
                "spec": {"choice": choice_of(i)}
            }))
            .expect("stack");
            let entry = catalog.get(&stack.spec.choice).expect("a catalog entry");
            let mut children = desired::desired(&stack, entry, "floor-password").expect("children");
            children.secret.iter_mut().for_each(|s| s.metadata.owner_references = None);
            children.headless.iter_mut().for_each(|s| s.metadata.owner_references = None);
            children.service.metadata.owner_references = None;
            match &mut children.workload {
                Workload::Stateful(s) => s.metadata.owner_references = None,
                Workload::Stateless(d) => d.metadata.owner_references = None,
            }
            children
        })
        .collect();
    let available = {
        let client = client.clone();
        tokio::spawn(async move {
            let ready = std::sync::Mutex::new(HashSet::new());
            let note = |name: String, replicas: Option<i32>| {
                let mut ready = ready.lock().unwrap();
                if replicas == Some(1) {
                    ready.insert(name);
                }
                ready.len() >= count
            };
            let label = "portico.dev/stack";
            let sets =
                kit::stacks::watch_until::<StatefulSet>(&client, "floor", label, DEADLINE, |s| {
                    note(
                        s.name_any(),
                        s.status.as_ref().and_then(|s| s.ready_replicas),
                    )
                });
            let deployments =
                kit::stacks::watch_until::<Deployment>(&client, "floor", label, DEADLINE, |d| {
                    note(
                        d.name_any(),
                        d.status.as_ref().and_then(|s| s.available_replicas),
                    )
                });
            tokio::select! {
                () = sets => {}
                () = deployments => {}
            }
        })
    };
    let started = Instant::now();
    futures::stream::iter(requests)
        .map(|children| {
            let client = client.clone();
            async move {
                let post = PostParams::default();
                if let Some(secret) = &children.secret {
                    Api::<Secret>::namespaced(client.clone(), ns)
                        .create(&post, secret)
                        .await
                        .expect("Secret");
                }
                let services = Api::<Service>::namespaced(client.clone(), ns);
                for service in children.headless.iter().chain([&children.service]) {
                    services.create(&post, service).await.expect("Service");
                }
                match &children.workload {
                    Workload::Stateful(set) => {
                        Api::<StatefulSet>::namespaced(client, ns)
                            .create(&post, set)
                            .await
                            .expect("StatefulSet");
                    }
                    Workload::Stateless(deployment) => {
                        Api::<Deployment>::namespaced(client, ns)
                            .create(&post, deployment)
                            .await
                            .expect("Deployment");
                    }
                }
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    let children = started.elapsed();
    tokio::time::timeout(DEADLINE, available)
        .await
        .expect("every workload available in time")
        .expect("join");
    Floor {
        children,
        available: started.elapsed(),
    }
}

/// `apiserver_request_total` from the API server's own /metrics, by
/// (group, resource, subresource, verb), summed over codes.
async fn api_requests(client: &kube::Client) -> HashMap<(String, String, String, String), f64> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client
        .request_text(request)
        .await
        .expect("API server metrics");
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let key = (
            label("group"),
            label("resource"),
            label("subresource"),
            label("verb"),
        );
        *out.entry(key).or_insert(0.0) += value.trim().parse::<f64>().unwrap_or(0.0);
    }
    out
}

/// The requests Portico's reconciler makes, from the difference of two
/// `apiserver_request_total` readings. The API server does not label requests by
/// client, so this counts what only the reconciler does on this cluster: anything but
/// watches, lists and creates on Stacks; applies, reads and deletes of the children's kinds
/// (the controllers update, never apply, and read through informers); and Events
/// through events.k8s.io on Stacks are left out, as the scheduler posts there too.
fn reconciler_requests(
    before: &HashMap<(String, String, String, String), f64>,
    after: &HashMap<(String, String, String, String), f64>,
) -> f64 {
    let children = [
        "statefulsets",
        "deployments",
        "services",
        "secrets",
        "persistentvolumeclaims",
        "pods",
    ];
    after
        .iter()
        .filter(|((_, resource, subresource, verb), _)| {
            // The benchmark's own creates are POSTs; the reconciler never creates one.
            let stack = resource == "stacks" && !matches!(verb.as_str(), "WATCH" | "LIST" | "POST");
            let child = children.contains(&resource.as_str())
                && subresource.is_empty()
                && matches!(verb.as_str(), "APPLY" | "GET" | "DELETE");
            stack || child
        })
        .map(|(key, n)| n - before.get(key).copied().unwrap_or(0.0))
        .sum()
}

/// `(verb resource code, count)` of the requests Portico's reconciler counted on its
/// /metrics, but for watches, lists and the Lease (per run, not per Stack).
async fn own_requests(url: &str) -> Vec<(String, f64)> {
    let text = reqwest::get(url)
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text");
    let mut out: Vec<(String, f64)> = text
        .lines()
        .filter_map(|line| line.strip_prefix("portico_reconciler_api_requests_total{"))
        .filter_map(|rest| rest.split_once("} "))
        .filter(|(labels, _)| {
            !labels.contains("verb=\"WATCH\"")
                && !labels.contains("verb=\"LIST\"")
                && !labels.contains("leases")
        })
        .map(|(labels, n)| (labels.replace('"', ""), n.trim().parse().unwrap_or(0.0)))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// Why kube-runtime ran a reconcile, from its span on a log line ("object updated",
/// "related object updated: Secret", "reconciler requested retry", …).
fn trigger(line: &str) -> String {
    let Some((_, rest)) = line.split_once("object.reason") else {
        return "unknown".into();
    };
    let value = rest.split_once('=').map_or("", |(_, v)| v);
    // Past the colour codes, up to the next one or the span's end.
    let value = value
        .trim_start_matches(|c: char| c == '\u{1b}' || c == '[' || c.is_ascii_digit() || c == 'm');
    let value = value.split(['\u{1b}', '}']).next().unwrap_or_default();
    // "related object updated: Secret.v1./name.ns" → "related object updated: Secret"
    match value.split_once(": ") {
        Some((why, object)) => format!("{why}: {}", object.split('.').next().unwrap_or_default()),
        None => value.to_string(),
    }
}

/// "VERB resource[/subresource]" of the API server's requests between two readings,
/// most first (watches, which stay open, left out).
fn busiest(
    before: &HashMap<(String, String, String, String), f64>,
    after: &HashMap<(String, String, String, String), f64>,
) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = after
        .iter()
        .filter(|((_, _, _, verb), _)| verb != "WATCH")
        .map(|(key, n)| {
            let (_, resource, sub, verb) = key;
            let what = if sub.is_empty() {
                format!("{verb} {resource}")
            } else {
                format!("{verb} {resource}/{sub}")
            };
            (what, n - before.get(key).copied().unwrap_or(0.0))
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// What one Stack has so far.
#[derive(Default)]
struct Seen {
    workload: bool,
    service: bool,
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("BENCH_STACKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let only = std::env::var("BENCH_CHOICE").ok();
    let choice_of = move |i: usize| match only.as_deref() {
        Some("tomcat") => "tomcat",
        Some("mysql") => "mysql",
        _ if i.is_multiple_of(2) => "mysql",
        _ => "tomcat",
    };
    let crds = portico_crds().expect("deploy/crds");
    let plane = tokio::task::spawn_blocking(move || ControlPlane::start_with(crds))
        .await
        .expect("join")
        .expect("cluster");
    let client = plane.admin_client().await.expect("client");
    // Room for the floor's Pods and the Stacks', on top of the cluster's own nodes.
    add_capacity(&client, "bench-node", 2 * count).await;

    let floor_before = api_requests(&client).await;
    let floor = floor(&client, count, &choice_of).await;
    let floor_after = api_requests(&client).await;

    let ns = "bench".to_string();
    kit::create_namespace(&client, &ns).await;
    let reconciles = Arc::new(AtomicU64::new(0));
    let reasons = Arc::new(std::sync::Mutex::new(HashMap::<String, u64>::new()));
    let metrics_addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port");
    let mut server = Command::new(env!("CARGO_BIN_EXE_portico"))
        .env("PORTICO_METRICS_LISTEN", metrics_addr.to_string())
        .env(
            "PORTICO_RECONCILE_CONCURRENCY",
            std::env::var("BENCH_CONCURRENCY").unwrap_or("16".into()),
        )
        .env("KUBECONFIG", plane.admin_kubeconfig())
        .env("PORTICO_RECONCILER", "only")
        .env("POD_NAMESPACE", &ns)
        .env(
            "PORTICO_LOG",
            "warn,portico_server::reconcile=debug,kube_runtime::controller=debug",
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("portico starts");
    for pipe in [
        Box::new(server.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(server.stderr.take().expect("stderr")),
    ] {
        let counter = reconciles.clone();
        let reasons = reasons.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.contains("reconciled") {
                    counter.fetch_add(1, Ordering::Relaxed);
                    *reasons.lock().unwrap().entry(trigger(&line)).or_insert(0) += 1;
                } else if line.contains("WARN") || line.contains("ERROR") {
                    eprintln!("[portico] {line}");
                }
            }
        });
    }

    // Watches first, so nothing is missed; each records when its condition held.
    let label = "portico.dev/stack";
    let children = {
        let client = client.clone();
        let ns = ns.clone();
        tokio::spawn(async move {
            let seen = std::sync::Mutex::new(HashMap::<String, Seen>::new());
            let complete = |seen: &HashMap<String, Seen>| {
                seen.values().filter(|s| s.workload && s.service).count() >= count
            };
            let workloads =
                kit::stacks::watch_until::<StatefulSet>(&client, &ns, label, DEADLINE, |s| {
                    let mut seen = seen.lock().unwrap();
                    seen.entry(s.name_any()).or_default().workload = true;
                    complete(&seen)
                });
            let deployments =
                kit::stacks::watch_until::<Deployment>(&client, &ns, label, DEADLINE, |d| {
                    let mut seen = seen.lock().unwrap();
                    seen.entry(d.name_any()).or_default().workload = true;
                    complete(&seen)
                });
            let services =
                kit::stacks::watch_until::<Service>(&client, &ns, label, DEADLINE, |s| {
                    let mut seen = seen.lock().unwrap();
                    seen.entry(s.name_any()).or_default().service = true;
                    complete(&seen)
                });
            // Whichever watch sees the last child ends the wait.
            tokio::select! {
                () = workloads => {}
                () = deployments => {}
                () = services => {}
            }
            Instant::now()
        })
    };
    let ready = {
        let client = client.clone();
        let ns = ns.clone();
        tokio::spawn(async move {
            let mut ready = HashSet::new();
            let api: Api<Stack> = Api::namespaced(client, &ns);
            let mut events = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Some(Ok(stack)) = events.next().await {
                if stack.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Ready") {
                    ready.insert(stack.name_any());
                } else {
                    ready.remove(&stack.name_any());
                }
                if ready.len() >= count {
                    break;
                }
            }
            (Instant::now(), ready.len())
        })
    };
    let stacks: Api<Stack> = Api::namespaced(client.clone(), &ns);
    let requests_before = api_requests(&client).await;
    let started = Instant::now();
    futures::stream::iter(0..count)
        .map(|i| {
            let stacks = stacks.clone();
            let choice = choice_of(i);
            async move {
                let stack: Stack = serde_json::from_value(json!({
                    "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
                    "metadata": {"name": format!("s-{i:04}")}, "spec": {"choice": choice}
                }))
                .expect("stack");
                stacks
                    .create(&PostParams::default(), &stack)
                    .await
                    .expect("create Stack");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    let created = started.elapsed();
    let children_at = tokio::time::timeout(DEADLINE, children)
        .await
        .expect("every Stack has its children in time")
        .expect("join")
        - started;
    let (ready_at, ready_count) = tokio::time::timeout(DEADLINE, ready)
        .await
        .expect("every Stack Ready in time")
        .expect("join");
    let ready_at = ready_at - started;
    let requests_after = api_requests(&client).await;
    let requests = reconciler_requests(&requests_before, &requests_after);
    let own = own_requests(&format!("http://{metrics_addr}/metrics")).await;
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), &ns)
        .list(&Default::default())
        .await
        .expect("events");
    let mut told = HashMap::<String, u64>::new();
    for event in events
        .items
        .iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("portico-reconciler"))
    {
        *told
            .entry(event.reason.clone().unwrap_or_default())
            .or_insert(0) += 1;
    }
    // The kernel's high-water mark: the peak over the whole run.
    let rss = kit::rss_mb(server.id(), "VmHWM:");
    let cpu = kit::cpu_seconds(server.id());
    let n = reconciles.load(Ordering::Relaxed);

    println!(
        "cluster: kube-apiserver, kube-controller-manager, kube-scheduler {}, KWOK {} ({} simulated nodes)",
        portico_control_plane::pinned_kubernetes_version(),
        portico_control_plane::binaries::pinned_kwok_version(),
        nodes::DEFAULT_NODES + (2 * count).div_ceil(PODS_PER_NODE)
    );
    println!("floor (bare client creating the same children per request, {IN_FLIGHT} in flight):");
    println!(
        "  every request has its children after {:.1}s",
        floor.children.as_secs_f64()
    );
    println!(
        "  every workload available after {:.1}s",
        floor.available.as_secs_f64()
    );
    let mysql = (0..count).filter(|i| choice_of(*i) == "mysql").count();
    println!(
        "portico: {count} Stacks ({mysql} MySQL, {} Tomcat), created in {:.1}s ({IN_FLIGHT} in flight)",
        count - mysql,
        created.as_secs_f64()
    );
    println!(
        "  every Stack has its workload and Service after {:.1}s  (ratio to the floor: {:.2})",
        children_at.as_secs_f64(),
        children_at.as_secs_f64() / floor.children.as_secs_f64()
    );
    println!(
        "  Ready: {ready_count}/{count} after {:.1}s  (ratio to every floor workload available: {:.2})",
        ready_at.as_secs_f64(),
        ready_at.as_secs_f64() / floor.available.as_secs_f64()
    );
    println!(
        "  reconciles: {n} ({:.1} per Stack, {:.0}/s over the run)",
        n as f64 / count as f64,
        n as f64 / ready_at.as_secs_f64()
    );
    println!(
        "  API requests by the reconciler (apiserver_request_total: on Stacks except watch/list/create, applies/gets/deletes of children): {requests:.0} ({:.1} per Stack)",
        requests / count as f64
    );
    let mut reasons: Vec<(String, u64)> = reasons.lock().unwrap().clone().into_iter().collect();
    reasons.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (why, n) in reasons {
        println!("    {why}: {:.2} per Stack", n as f64 / count as f64);
    }
    let per_stack: f64 = own.iter().map(|(_, n)| n).sum::<f64>() / count as f64;
    println!(
        "  API requests by the reconciler (its own /metrics; no watches, lists or Lease renewals): {per_stack:.2} per Stack"
    );
    for (series, n) in &own {
        println!("    {series}: {:.2} per Stack", n / count as f64);
    }
    println!(
        "  the API server's busiest requests (every client), floor phase | portico phase, per request or Stack:"
    );
    let floor_top = busiest(&floor_before, &floor_after);
    let portico_top = busiest(&requests_before, &requests_after);
    for i in 0..floor_top.len().max(portico_top.len()).min(12) {
        let cell = |top: &[(String, f64)]| {
            top.get(i)
                .map(|(what, n)| format!("{what} {:.2}", n / count as f64))
                .unwrap_or_default()
        };
        println!("    {:<48} | {}", cell(&floor_top), cell(&portico_top));
    }
    println!("  Events the reconciler posted, by reason: {told:?}");
    println!("  portico peak RSS: {rss:.0} MB; CPU {cpu:.1}s (user + system, whole run)");
    let _ = server.kill();
    let _ = server.wait();
}
