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
//!
//! Between them, the Python operator Portico replaces: kopf (from PyPI, pinned, in a
//! virtualenv under `~/.cache/portico`) running seed 000's job
//! (`seed000_operator.py`: a Deployment and a NodePort Service per request, and a
//! status message, which the seed's CRD prunes), given the same number of requests, 16 in flight. It is warmed up
//! with one request first, so Python's start is not counted against it; Portico too
//! (its Lease taken, its stores listed).
//!
//! Each phase's namespace is deleted, and waited for until it is gone, before the next
//! phase starts: every phase runs on a cluster holding only the cluster's own objects.
//!
//! Per request, each phase's time from its create to its children is printed; for
//! Portico, what its reconciles spent it on (from its own /metrics: reconcile and API
//! request durations), and the rest, waiting (the debounce and a free reconcile slot).
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use portico_control_plane::nodes;
use portico_control_plane::{ControlPlane, cluster::portico_crds};
use portico_server::reconcile::catalog::{Catalog, DEFAULT_CATALOG};
use portico_server::reconcile::desired::{self, Children, Workload};
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// Requests in flight, for the floor and for creating the Stacks alike.
const IN_FLIGHT: usize = 16;
const DEADLINE: Duration = Duration::from_secs(900);
/// The label the benchmark finds children by; its value names their request.
const REQUEST_LABEL: &str = "portico.dev/stack";
/// kopf and the official Python client, as pinned here.
const KOPF_VERSION: &str = "1.45.2";
const KUBERNETES_PY_VERSION: &str = "37.0.2";

struct Floor {
    children: Duration,
    available: Duration,
    /// Per request, from its first create to its last.
    latencies: Vec<Duration>,
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
            let mut children = desired::desired(&stack, entry, desired::Passwords::placeholder("floor-password")).expect("children");
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
    let latencies = futures::stream::iter(requests)
        .map(|children| {
            let client = client.clone();
            async move {
                let began = Instant::now();
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
                began.elapsed()
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<Duration>>()
        .await;
    let children = started.elapsed();
    tokio::time::timeout(DEADLINE, available)
        .await
        .expect("every workload available in time")
        .expect("join");
    Floor {
        children,
        available: started.elapsed(),
        latencies,
    }
}

/// When each request named `prefix…` (by the value of its children's
/// [`REQUEST_LABEL`]) first had a workload and a Service in `ns`, once `count` requests
/// have both.
fn until_children(
    client: &kube::Client,
    ns: &str,
    prefix: &'static str,
    count: usize,
) -> tokio::task::JoinHandle<HashMap<String, Instant>> {
    let client = client.clone();
    let ns = ns.to_string();
    tokio::spawn(async move {
        let seen = std::sync::Mutex::new(HashMap::<String, Seen>::new());
        let note = |labels: &std::collections::BTreeMap<String, String>, workload: bool| {
            let Some(request) = labels.get(REQUEST_LABEL).filter(|r| r.starts_with(prefix)) else {
                return false;
            };
            let mut seen = seen.lock().unwrap();
            let entry = seen.entry(request.clone()).or_default();
            if workload {
                entry.workload = true;
            } else {
                entry.service = true;
            }
            if entry.workload && entry.service && entry.at.is_none() {
                entry.at = Some(Instant::now());
            }
            seen.values().filter(|s| s.at.is_some()).count() >= count
        };
        let label = REQUEST_LABEL;
        let sets = kit::stacks::watch_until::<StatefulSet>(&client, &ns, label, DEADLINE, |s| {
            note(s.labels(), true)
        });
        let deployments =
            kit::stacks::watch_until::<Deployment>(&client, &ns, label, DEADLINE, |d| {
                note(d.labels(), true)
            });
        let services = kit::stacks::watch_until::<Service>(&client, &ns, label, DEADLINE, |s| {
            note(s.labels(), false)
        });
        // Whichever watch sees the last child ends the wait.
        tokio::select! {
            () = sets => {}
            () = deployments => {}
            () = services => {}
        }
        let seen = seen.into_inner().unwrap();
        seen.into_iter()
            .filter_map(|(request, s)| Some((request, s.at?)))
            .collect()
    })
}

/// Each request's time from its create to its children, sorted.
fn latencies(
    created: &HashMap<String, Instant>,
    children: &HashMap<String, Instant>,
) -> Vec<Duration> {
    let mut out: Vec<Duration> = children
        .iter()
        .filter_map(|(request, at)| Some(at.saturating_duration_since(*created.get(request)?)))
        .collect();
    out.sort();
    out
}

/// "p50 … mean … p99 …" of `latencies`, in seconds.
fn spread(latencies: &mut [Duration]) -> String {
    latencies.sort();
    let at = |q: f64| {
        let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len().max(1)) - 1;
        latencies.get(i).map_or(0.0, Duration::as_secs_f64)
    };
    let mean =
        latencies.iter().map(Duration::as_secs_f64).sum::<f64>() / latencies.len().max(1) as f64;
    format!("p50 {:.2}s, mean {mean:.2}s, p99 {:.2}s", at(0.5), at(0.99))
}

/// The virtualenv's `kopf`, made on first use.
fn kopf_binary() -> PathBuf {
    let cache = std::env::var_os("PORTICO_CACHE_DIR").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/portico"),
        PathBuf::from,
    );
    let venv = cache.join(format!("kopf-{KOPF_VERSION}"));
    let kopf = venv.join("bin/kopf");
    if !kopf.is_file() {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3");
        assert!(made.success(), "python3 -m venv {}", venv.display());
        let installed = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet"])
            .arg(format!("kopf=={KOPF_VERSION}"))
            .arg(format!("kubernetes=={KUBERNETES_PY_VERSION}"))
            .status()
            .expect("pip");
        assert!(installed.success(), "pip install kopf");
    }
    kopf
}

struct Kopf {
    children: Duration,
    handled: Duration,
    available: Duration,
    latencies: Vec<Duration>,
    rss_mb: f64,
    cpu_seconds: f64,
    /// The API server's readings and CPU seconds from the first request (after the
    /// warm-up) to the end.
    api_server: ApiServerUse,
}

/// The API server's readings at a phase's start and end, and the CPU seconds it spent
/// in between.
struct ApiServerUse {
    before: Readings,
    after: Readings,
    cpu: f64,
}

/// Creates the request `object` (named "warm-up") and waits until `served` holds for
/// it: the operator is loaded, its Lease taken, its watches listed.
async fn warm_up<K>(api: &Api<K>, object: &K, served: impl Fn(&K) -> bool + Send + 'static)
where
    K: kube::Resource
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug
        + Send
        + 'static,
{
    api.create(&PostParams::default(), object)
        .await
        .expect("create the warm-up request");
    let done = await_condition(api.clone(), "warm-up", move |o: Option<&K>| {
        o.is_some_and(&served)
    });
    tokio::time::timeout(DEADLINE, done)
        .await
        .expect("the warm-up request served in time")
        .expect("watching the warm-up request");
}

/// A child process killed when the benchmark is done with it, or stops at a panic.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Seed 000's operator under kopf, watching `ns` on the cluster of `kubeconfig`.
fn start_kopf(kopf: &std::path::Path, kubeconfig: &std::path::Path, ns: &str) -> Killed {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/seed000_operator.py");
    let mut command = Command::new(kopf);
    command
        .args(["run", "--standalone", "--namespace", ns, script])
        .env("KUBECONFIG", kubeconfig)
        .stdout(Stdio::null());
    // kopf logs every handler it runs, as it does by default; only trouble is shown.
    Killed(kit::process::spawn_reading_stderr(&mut command, |line| {
        if line.contains("ERROR") || line.contains("Traceback") {
            eprintln!("[kopf] {line}");
        }
    }))
}

/// The request `name` to kopf for `choice`, labelled with [`REQUEST_LABEL`] (which its
/// children are found by) when `labelled`.
fn crd_kind_request(name: &str, labelled: bool, choice: &str) -> DynamicObject {
    let labels = if labelled {
        json!({ REQUEST_LABEL: name })
    } else {
        json!({})
    };
    kit::crd_kind(json!({"name": name, "labels": labels}), choice, 1)
}

/// kopf's mark that a request is handled, written once its handler succeeded (with
/// the status message: which the seed's CRD, having no status in its schema, prunes).
fn kopf_handled(o: &DynamicObject) -> bool {
    o.annotations()
        .contains_key("kopf.zalando.org/last-handled-configuration")
}

/// When kopf has marked `count` of the labelled `requests` handled.
fn until_all_handled(
    requests: &Api<DynamicObject>,
    count: usize,
) -> tokio::task::JoinHandle<Instant> {
    let requests = requests.clone();
    tokio::spawn(async move {
        let mut done = HashSet::new();
        let config = watcher::Config::default().labels(REQUEST_LABEL);
        let mut events = watcher(requests, config)
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(request)) = events.next().await {
            if kopf_handled(&request) {
                done.insert(request.name_any());
            }
            if done.len() >= count {
                break;
            }
        }
        Instant::now()
    })
}

/// When `count` of the labelled Deployments in `ns` are available.
fn until_all_available(
    client: &kube::Client,
    ns: &'static str,
    count: usize,
) -> tokio::task::JoinHandle<Instant> {
    let client = client.clone();
    tokio::spawn(async move {
        let mut ready = HashSet::new();
        kit::stacks::watch_until::<Deployment>(&client, ns, REQUEST_LABEL, DEADLINE, |d| {
            if d.status.as_ref().and_then(|s| s.available_replicas) == Some(1) {
                ready.insert(d.name_any());
            }
            ready.len() >= count
        })
        .await;
        Instant::now()
    })
}

/// Creates kopf's `count` labelled requests `k-0000`… (each the choice `choice_of`
/// says), `IN_FLIGHT` at a time: when each was sent.
async fn create_crd_kinds(
    requests: &Api<DynamicObject>,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> HashMap<String, Instant> {
    let created = std::sync::Mutex::new(HashMap::new());
    futures::stream::iter(0..count)
        .map(|i| {
            let name = format!("k-{i:04}");
            let object = crd_kind_request(&name, true, choice_of(i));
            let requests = requests.clone();
            let created = &created;
            async move {
                created.lock().unwrap().insert(name, Instant::now());
                requests
                    .create(&PostParams::default(), &object)
                    .await
                    .expect("create a CrdKind");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    created.into_inner().unwrap()
}

/// Seed 000's kopf operator, given `count` requests in a namespace of its own,
/// `IN_FLIGHT` at a time once one request has been served (kopf and the Python client
/// loaded and watching).
async fn kopf(
    client: &kube::Client,
    (kopf, kubeconfig): (&std::path::Path, &std::path::Path),
    apiserver: u32,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> Kopf {
    let ns = "kopf";
    kit::create_namespace(client, ns).await;
    let operator = start_kopf(kopf, kubeconfig, ns);
    let requests: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &kit::crd_kind_resource());
    let warm_up_request = crd_kind_request("warm-up", false, "tomcat");
    warm_up(&requests, &warm_up_request, kopf_handled).await;

    let before = api_requests(client).await;
    let cpu_before = kit::cpu_seconds(apiserver);
    let children = until_children(client, ns, "k-", count);
    let handled_all = until_all_handled(&requests, count);
    let available = until_all_available(client, ns, count);
    let started = Instant::now();
    let created = create_crd_kinds(&requests, count, choice_of).await;
    let children_at = tokio::time::timeout(DEADLINE, children)
        .await
        .expect("every request has its children in time")
        .expect("join");
    let handled_at = tokio::time::timeout(DEADLINE, handled_all)
        .await
        .expect("every request handled in time")
        .expect("join");
    let available_at = tokio::time::timeout(DEADLINE, available)
        .await
        .expect("every Deployment available in time")
        .expect("join");
    let latencies = latencies(&created, &children_at);
    let children = children_at
        .values()
        .max()
        .map_or(Duration::ZERO, |last| *last - started);
    let after = api_requests(client).await;
    let apiserver_cpu = kit::cpu_seconds(apiserver) - cpu_before;
    let rss_mb = kit::rss_mb(operator.0.id(), "VmHWM:");
    let cpu_seconds = kit::cpu_seconds(operator.0.id());
    drop(operator);
    Kopf {
        children,
        handled: handled_at - started,
        available: available_at - started,
        latencies,
        rss_mb,
        cpu_seconds,
        api_server: ApiServerUse {
            before,
            after,
            cpu: apiserver_cpu,
        },
    }
}

/// How much each series of `family` grew between two /metrics texts.
fn metric_deltas(before: &str, after: &str, family: &str) -> Vec<(String, f64)> {
    let before: HashMap<String, f64> = metric_sums(before, family).into_iter().collect();
    metric_sums(after, family)
        .into_iter()
        .map(|(labels, n)| {
            let was = before.get(&labels).copied().unwrap_or(0.0);
            (labels, n - was)
        })
        .collect()
}

/// Each `family{labels} value` line of a /metrics text, by the series' labels.
fn metric_sums(text: &str, family: &str) -> Vec<(String, f64)> {
    let prefix = format!("{family}{{");
    text.lines()
        .filter_map(|line| line.strip_prefix(prefix.as_str()))
        .filter_map(|rest| rest.split_once("} "))
        .map(|(labels, n)| (labels.replace('"', ""), n.trim().parse().unwrap_or(0.0)))
        .collect()
}

type Series = (String, String, String, String);

/// The API server's own count and time of requests, by (group, resource,
/// subresource, verb), summed over codes and scopes.
#[derive(Default)]
struct Readings {
    /// `apiserver_request_total`.
    count: HashMap<Series, f64>,
    /// `apiserver_request_duration_seconds_sum`: from the request's arrival to its
    /// answer, as the API server timed it.
    seconds: HashMap<Series, f64>,
}

/// The API server's /metrics, read now.
async fn api_requests(client: &kube::Client) -> Readings {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client
        .request_text(request)
        .await
        .expect("API server metrics");
    let mut out = Readings::default();
    for line in text.lines() {
        let (rest, into) = if let Some(rest) = line.strip_prefix("apiserver_request_total{") {
            (rest, &mut out.count)
        } else if let Some(rest) = line.strip_prefix("apiserver_request_duration_seconds_sum{") {
            (rest, &mut out.seconds)
        } else {
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
        *into.entry(key).or_insert(0.0) += value.trim().parse::<f64>().unwrap_or(0.0);
    }
    out
}

/// The requests Portico's reconciler makes, from the difference of two
/// `apiserver_request_total` readings. The API server does not label requests by
/// client, so this counts what only the reconciler does on this cluster: anything but
/// watches, lists and creates on Stacks; applies, reads and deletes of the children's kinds
/// (the controllers update, never apply, and read through informers); and Events
/// through events.k8s.io on Stacks are left out, as the scheduler posts there too.
fn reconciler_requests(before: &HashMap<Series, f64>, after: &HashMap<Series, f64>) -> f64 {
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

/// The series of one of Portico's request families (`verb resource [code]`, count or
/// seconds), but for watches, lists and the Lease, most first.
fn own_requests(series: Vec<(String, f64)>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = series
        .into_iter()
        .filter(|(labels, _)| {
            !labels.contains("verb=WATCH")
                && !labels.contains("verb=LIST")
                && !labels.contains("leases")
        })
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
fn busiest(before: &HashMap<Series, f64>, after: &HashMap<Series, f64>) -> Vec<(String, f64)> {
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

/// Deletes a phase's namespace and waits until it is gone (its workloads, Pods and
/// Services collected), so that each phase starts on a cluster as empty as the
/// floor's: the API server's cost per write grows with what it already holds.
async fn clear(client: &kube::Client, ns: &str) {
    let started = Instant::now();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let uid = namespaces
        .get(ns)
        .await
        .expect("the phase's namespace")
        .uid()
        .expect("a uid");
    namespaces
        .delete(ns, &Default::default())
        .await
        .expect("namespace deleted");
    tokio::time::timeout(
        Duration::from_secs(900),
        await_condition(namespaces, ns, conditions::is_deleted(&uid)),
    )
    .await
    .expect("the namespace gone in time")
    .expect("watching the namespace");
    println!(
        "  (namespace {ns} and everything in it removed in {:.1}s before the next phase)",
        started.elapsed().as_secs_f64()
    );
}

/// What one request has so far, and since when it has both.
#[derive(Default)]
struct Seen {
    workload: bool,
    service: bool,
    at: Option<Instant>,
}

/// A control plane with Portico's CRDs and seed 000's (for kopf), and room on KWOK's
/// nodes for every phase's Pods (`count` requests each): the plane and its admin
/// client.
async fn start_cluster(count: usize) -> (ControlPlane, kube::Client) {
    let mut crds = portico_crds().expect("deploy/crds");
    // Seed 000's kind, for kopf.
    crds.extend(
        portico_control_plane::apply::read_documents(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../end2end/fixtures/seeds/000-crdkind-crd.yaml"
        )))
        .expect("seed 000's CRD"),
    );
    let plane = tokio::task::spawn_blocking(move || ControlPlane::start_with(crds))
        .await
        .expect("join")
        .expect("cluster");
    let client = plane.admin_client().await.expect("client");
    // Room for the floor's Pods, kopf's and the Stacks', on top of the cluster's own
    // nodes.
    kit::nodes::add_capacity(&client, "bench-node", 3 * count + 2).await;
    (plane, client)
}

/// The floor's phase, and what the API server (process `apiserver`) did over it: its
/// readings and CPU seconds at the phase's start and end.
async fn measure_floor(
    client: &kube::Client,
    apiserver: u32,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> (Floor, ApiServerUse) {
    let cpu = kit::cpu_seconds(apiserver);
    let before = api_requests(client).await;
    let floor = floor(client, count, choice_of).await;
    let after = api_requests(client).await;
    let cpu = kit::cpu_seconds(apiserver) - cpu;
    (floor, ApiServerUse { before, after, cpu })
}

/// The `portico` process under measure, and what its log has told so far.
struct PorticoProcess {
    server: std::process::Child,
    /// Where its own /metrics are served.
    metrics: std::net::SocketAddr,
    /// The reconciles it logged, and why each ran.
    reconciles: Arc<AtomicU64>,
    reasons: Arc<std::sync::Mutex<HashMap<String, u64>>>,
}

/// The `portico` binary, reconciling only (`ns` its own namespace), against the cluster
/// of `kubeconfig`; its log is read for its reconciles, and its warnings and errors
/// shown.
fn start_portico(kubeconfig: &std::path::Path, ns: &str) -> PorticoProcess {
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
        .env("KUBECONFIG", kubeconfig)
        .env("PORTICO_RECONCILER", "only")
        .env("POD_NAMESPACE", ns)
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
    PorticoProcess {
        server,
        metrics: metrics_addr,
        reconciles,
        reasons,
    }
}

/// Portico's own /metrics (served at `metrics`), read now.
async fn scrape(metrics: std::net::SocketAddr) -> String {
    reqwest::get(format!("http://{metrics}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .expect("metrics text")
}

/// When `count` of the Stacks `s-…` in `ns` report Ready, and how many do then.
fn until_stacks_ready(
    client: &kube::Client,
    ns: &str,
    count: usize,
) -> tokio::task::JoinHandle<(Instant, usize)> {
    let client = client.clone();
    let ns = ns.to_string();
    tokio::spawn(async move {
        let mut ready = HashSet::new();
        let api: Api<Stack> = Api::namespaced(client, &ns);
        let mut events = watcher(api, watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(Ok(stack)) = events.next().await {
            if !stack.name_any().starts_with("s-") {
                continue;
            }
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
}

/// Creates the `count` Stacks `s-0000`… (each the choice `choice_of` says), `IN_FLIGHT`
/// at a time: when each was sent.
async fn create_stacks(
    stacks: &Api<Stack>,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> HashMap<String, Instant> {
    let created_at = std::sync::Mutex::new(HashMap::new());
    futures::stream::iter(0..count)
        .map(|i| {
            let stacks = stacks.clone();
            let choice = choice_of(i);
            let created_at = &created_at;
            async move {
                let name = format!("s-{i:04}");
                let stack: Stack = serde_json::from_value(json!({
                    "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
                    "metadata": {"name": name}, "spec": {"choice": choice}
                }))
                .expect("stack");
                created_at.lock().unwrap().insert(name, Instant::now());
                stacks
                    .create(&PostParams::default(), &stack)
                    .await
                    .expect("create Stack");
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect::<Vec<()>>()
        .await;
    created_at.into_inner().unwrap()
}

/// The Events Portico's reconciler posted in `ns`, counted by reason.
async fn events_by_reason(client: &kube::Client, ns: &str) -> HashMap<String, u64> {
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), ns)
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
    told
}

/// What Portico's phase measured. Its process runs on (its log still read) until the
/// figures are printed.
struct PorticoPhase {
    process: PorticoProcess,
    /// From the first create to the last create's answer.
    created: Duration,
    /// From the first create until every Stack had its workload and Service.
    children: Duration,
    /// Per Stack, its create to both children seen by a watch.
    latencies: Vec<Duration>,
    /// From the first create until every Stack was Ready, and how many were.
    ready: Duration,
    ready_count: usize,
    api_server: ApiServerUse,
    /// The reconciler's requests, by the API server's count.
    requests: f64,
    /// Portico's own /metrics after its warm-up, and at the end.
    metrics_before: String,
    metrics_after: String,
    /// The Events the reconciler posted, by reason.
    told: HashMap<String, u64>,
    /// Portico's peak RSS and CPU seconds over the whole run, and its reconciles.
    rss_mb: f64,
    cpu_seconds: f64,
    reconciles: u64,
}

/// Portico's phase: the reconciler in a namespace of its own, warmed up with one
/// Stack, then given `count` Stacks, `IN_FLIGHT` in flight; measured until every Stack
/// has its children and until every one is Ready.
async fn measure_portico(
    client: &kube::Client,
    kubeconfig: &std::path::Path,
    apiserver: u32,
    count: usize,
    choice_of: impl Fn(usize) -> &'static str,
) -> PorticoPhase {
    let ns = "bench".to_string();
    kit::create_namespace(client, &ns).await;
    let process = start_portico(kubeconfig, &ns);

    // One Stack first, as for kopf: the Lease taken and the stores listed.
    let stacks: Api<Stack> = Api::namespaced(client.clone(), &ns);
    let first: Stack = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "warm-up"}, "spec": {"choice": "tomcat"}
    }))
    .expect("stack");
    warm_up(&stacks, &first, |s: &Stack| {
        s.status
            .as_ref()
            .is_some_and(|s| s.observed_generation == Some(1))
    })
    .await;

    // Watches first, so nothing is missed; each records when its condition held.
    let children = until_children(client, &ns, "s-", count);
    let ready = until_stacks_ready(client, &ns, count);
    let requests_before = api_requests(client).await;
    let portico_cpu = kit::cpu_seconds(apiserver);
    // Portico's own counts after its warm-up, so only the measured Stacks' are shown.
    let metrics_before = scrape(process.metrics).await;
    let started = Instant::now();
    let created_at = create_stacks(&stacks, count, choice_of).await;
    let created = started.elapsed();
    let children_seen = tokio::time::timeout(DEADLINE, children)
        .await
        .expect("every Stack has its children in time")
        .expect("join");
    let latencies = latencies(&created_at, &children_seen);
    let children_at = children_seen
        .values()
        .max()
        .map_or(Duration::ZERO, |last| *last - started);
    let (ready_at, ready_count) = tokio::time::timeout(DEADLINE, ready)
        .await
        .expect("every Stack Ready in time")
        .expect("join");
    let requests_after = api_requests(client).await;
    let portico_cpu = kit::cpu_seconds(apiserver) - portico_cpu;
    let requests = reconciler_requests(&requests_before.count, &requests_after.count);
    let metrics_after = scrape(process.metrics).await;
    let told = events_by_reason(client, &ns).await;
    // The kernel's high-water mark: the peak over the whole run.
    let rss_mb = kit::rss_mb(process.server.id(), "VmHWM:");
    let cpu_seconds = kit::cpu_seconds(process.server.id());
    let reconciles = process.reconciles.load(Ordering::Relaxed);
    PorticoPhase {
        process,
        created,
        children: children_at,
        latencies,
        ready: ready_at - started,
        ready_count,
        api_server: ApiServerUse {
            before: requests_before,
            after: requests_after,
            cpu: portico_cpu,
        },
        requests,
        metrics_before,
        metrics_after,
        told,
        rss_mb,
        cpu_seconds,
        reconciles,
    }
}

/// The cluster, then the floor's and kopf's figures.
fn print_floor_and_kopf(count: usize, floor: &mut Floor, kopf: &mut Kopf) {
    println!(
        "cluster: kube-apiserver, kube-controller-manager, kube-scheduler {}, KWOK {} ({} simulated nodes)",
        portico_control_plane::pinned_kubernetes_version(),
        portico_control_plane::binaries::pinned_kwok_version(),
        nodes::DEFAULT_NODES + (3 * count + 2).div_ceil(kit::nodes::PODS_PER_NODE)
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
    println!(
        "  per request, its children (its first create to its last create's answer): {}",
        spread(&mut floor.latencies)
    );
    println!(
        "kopf {KOPF_VERSION} running seed 000's job (a Deployment and a NodePort Service per request, a status message), {count} requests, {IN_FLIGHT} in flight:"
    );
    println!(
        "  every request has its children after {:.1}s  (ratio to the floor: {:.2})",
        kopf.children.as_secs_f64(),
        kopf.children.as_secs_f64() / floor.children.as_secs_f64()
    );
    println!(
        "  every request handled (its handler done, kopf's annotation written) after {:.1}s",
        kopf.handled.as_secs_f64()
    );
    println!(
        "  every Deployment available after {:.1}s",
        kopf.available.as_secs_f64()
    );
    println!(
        "  per request, its children (its create to both children seen by a watch): {}",
        spread(&mut kopf.latencies)
    );
    println!(
        "  kopf peak RSS: {:.0} MB; CPU {:.1}s (user + system, whole run)",
        kopf.rss_mb, kopf.cpu_seconds
    );
}

/// Portico's creates and its Stacks' children (`mysql` of the `count` being MySQL),
/// and what its reconciles spent their time on.
fn print_portico_children(
    count: usize,
    mysql: usize,
    floor: &Floor,
    kopf: &Kopf,
    portico: &mut PorticoPhase,
) {
    println!(
        "portico: {count} Stacks ({mysql} MySQL, {} Tomcat), created in {:.1}s ({IN_FLIGHT} in flight)",
        count - mysql,
        portico.created.as_secs_f64()
    );
    let children_at = portico.children;
    println!(
        "  every Stack has its workload and Service after {:.1}s  (ratio to the floor: {:.2}, to kopf: {:.2})",
        children_at.as_secs_f64(),
        children_at.as_secs_f64() / floor.children.as_secs_f64(),
        children_at.as_secs_f64() / kopf.children.as_secs_f64()
    );
    println!(
        "  per Stack, its children (its create to both children seen by a watch): {}",
        spread(&mut portico.latencies)
    );
    let sums =
        |family: &str| metric_deltas(&portico.metrics_before, &portico.metrics_after, family);
    let seconds = |family: &str| -> f64 { sums(family).iter().map(|(_, n)| n).sum() };
    let in_reconciles = seconds("portico_reconcile_duration_seconds_sum");
    println!(
        "  per Stack, time in its reconciles: {:.3}s over {:.1} reconciles, of which waiting on the API server:",
        in_reconciles / count as f64,
        seconds("portico_reconcile_duration_seconds_count") / count as f64
    );
    let api_time = own_requests(sums("portico_reconciler_api_request_duration_seconds_sum"));
    for (series, total) in &api_time {
        println!("    {series}: {:.3}s", total / count as f64);
    }
}

/// "VERB resource[/subresource] N ms": the API server's mean time for one kind of
/// request between two readings; empty when there was none.
fn own_time(
    before: &Readings,
    after: &Readings,
    (verb, resource, subresource): (&str, &str, &str),
) -> String {
    let key = |(_, r, sub, v): &&Series| {
        v == verb && r == resource && sub == subresource.trim_start_matches('/')
    };
    let delta = |m: &HashMap<Series, f64>, n: &HashMap<Series, f64>| -> f64 {
        m.iter()
            .filter(|(k, _)| key(k))
            .map(|(k, v)| v - n.get(k).copied().unwrap_or(0.0))
            .sum()
    };
    let seconds = delta(&after.seconds, &before.seconds);
    let requests = delta(&after.count, &before.count);
    if requests > 0.0 {
        format!(
            "{verb} {resource}{subresource} {:.1} ms",
            1000.0 * seconds / requests
        )
    } else {
        String::new()
    }
}

/// The API server's own time per request for each kind of write, phase by phase.
fn print_api_server_time(floor: &ApiServerUse, kopf: &ApiServerUse, portico: &ApiServerUse) {
    println!(
        "  the API server's own time (apiserver_request_duration_seconds) per request, floor | kopf | portico phase:"
    );
    for series in [
        ("POST", "services", ""),
        ("APPLY", "services", ""),
        ("POST", "deployments", ""),
        ("APPLY", "deployments", ""),
        ("POST", "statefulsets", ""),
        ("APPLY", "statefulsets", ""),
        ("POST", "secrets", ""),
        ("PATCH", "crdplural", ""),
        ("PATCH", "stacks", "/status"),
    ] {
        println!(
            "    {:<34} | {:<34} | {}",
            own_time(&floor.before, &floor.after, series),
            own_time(&kopf.before, &kopf.after, series),
            own_time(&portico.before, &portico.after, series)
        );
    }
}

/// Readiness, the reconciles and why they ran, and the reconciler's API requests (by
/// the API server's count and by its own /metrics), per Stack of the `count`.
fn print_reconciles(count: usize, floor: &Floor, portico: &PorticoPhase) {
    let (ready_at, ready_count) = (portico.ready, portico.ready_count);
    println!(
        "  Ready: {ready_count}/{count} after {:.1}s  (ratio to every floor workload available: {:.2})",
        ready_at.as_secs_f64(),
        ready_at.as_secs_f64() / floor.available.as_secs_f64()
    );
    let n = portico.reconciles;
    println!(
        "  reconciles: {n} ({:.1} per Stack, {:.0}/s over the run)",
        n as f64 / count as f64,
        n as f64 / ready_at.as_secs_f64()
    );
    let requests = portico.requests;
    println!(
        "  API requests by the reconciler (apiserver_request_total: on Stacks except watch/list/create, applies/gets/deletes of children): {requests:.0} ({:.1} per Stack)",
        requests / count as f64
    );
    let mut reasons: Vec<(String, u64)> = portico
        .process
        .reasons
        .lock()
        .unwrap()
        .clone()
        .into_iter()
        .collect();
    reasons.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    for (why, n) in reasons {
        println!("    {why}: {:.2} per Stack", n as f64 / count as f64);
    }
    let own = own_requests(metric_deltas(
        &portico.metrics_before,
        &portico.metrics_after,
        "portico_reconciler_api_requests_total",
    ));
    let per_stack: f64 = own.iter().map(|(_, n)| n).sum::<f64>() / count as f64;
    println!(
        "  API requests by the reconciler (its own /metrics; no watches, lists or Lease renewals): {per_stack:.2} per Stack"
    );
    for (series, n) in &own {
        println!("    {series}: {:.2} per Stack", n / count as f64);
    }
}

/// The API server's busiest requests (every client's), phase by phase, per request or
/// Stack of the `count`.
fn print_busiest(count: usize, floor: &ApiServerUse, kopf: &ApiServerUse, portico: &ApiServerUse) {
    println!(
        "  the API server's busiest requests (every client), floor | kopf | portico phase, per request or Stack:"
    );
    let floor_top = busiest(&floor.before.count, &floor.after.count);
    let kopf_top = busiest(&kopf.before.count, &kopf.after.count);
    let portico_top = busiest(&portico.before.count, &portico.after.count);
    let rows = floor_top.len().max(kopf_top.len()).max(portico_top.len());
    for i in 0..rows.min(12) {
        let cell = |top: &[(String, f64)]| {
            top.get(i)
                .map(|(what, n)| format!("{what} {:.2}", n / count as f64))
                .unwrap_or_default()
        };
        println!(
            "    {:<40} | {:<40} | {}",
            cell(&floor_top),
            cell(&kopf_top),
            cell(&portico_top)
        );
    }
}

/// The reconciler's Events, the API server's CPU per request or Stack of the `count`,
/// phase by phase, and Portico's own memory and CPU.
fn print_costs(count: usize, floor: &ApiServerUse, kopf: &ApiServerUse, portico: &PorticoPhase) {
    let told = &portico.told;
    println!("  Events the reconciler posted, by reason: {told:?}");
    println!(
        "  the API server's CPU per request (every client's requests and the controllers'), floor | kopf | portico phase: {:.0} | {:.0} | {:.0} ms",
        1000.0 * floor.cpu / count as f64,
        1000.0 * kopf.cpu / count as f64,
        1000.0 * portico.api_server.cpu / count as f64
    );
    let (rss, cpu) = (portico.rss_mb, portico.cpu_seconds);
    println!("  portico peak RSS: {rss:.0} MB; CPU {cpu:.1}s (user + system, whole run)");
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
    let (plane, client) = start_cluster(count).await;
    // Made (on the first run) before any phase, so nothing times pip.
    let kopf_binary = kopf_binary();

    let apiserver = kit::pid_of("kube-apiserver", &plane.dir().to_string_lossy())
        .expect("the API server's process");
    let (mut floor, floor_api) = measure_floor(&client, apiserver, count, &choice_of).await;
    clear(&client, "floor").await;
    let mut kopf = kopf(
        &client,
        (&kopf_binary, plane.admin_kubeconfig()),
        apiserver,
        count,
        &choice_of,
    )
    .await;
    clear(&client, "kopf").await;
    let mut portico = measure_portico(
        &client,
        plane.admin_kubeconfig(),
        apiserver,
        count,
        &choice_of,
    )
    .await;

    let mysql = (0..count).filter(|i| choice_of(*i) == "mysql").count();
    print_floor_and_kopf(count, &mut floor, &mut kopf);
    print_portico_children(count, mysql, &floor, &kopf, &mut portico);
    print_api_server_time(&floor_api, &kopf.api_server, &portico.api_server);
    print_reconciles(count, &floor, &portico);
    print_busiest(count, &floor_api, &kopf.api_server, &portico.api_server);
    print_costs(count, &floor_api, &kopf.api_server, &portico);
    let _ = portico.process.server.kill();
    let _ = portico.process.server.wait();
}
