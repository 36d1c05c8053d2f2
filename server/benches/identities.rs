//! Benchmark of many people on one portal, each their own Kubernetes identity, against
//! a real kube-apiserver and the real `portico` binary in token mode. Prints its
//! figures; run with `cargo bench -p server --bench identities` (env BENCH_IDENTITIES,
//! a comma list, default `100,300,1000`; BENCH_OBJECTS, default 10,000; BENCH_RATE,
//! default 100 writes/s; BENCH_SECONDS, default 20; BENCH_FLOOR=0 leaves the floor out).
//!
//! One cluster holds a shared namespace of BENCH_OBJECTS objects of one CRD and, per
//! person, a ServiceAccount with its own token, its own namespace of 3 objects, and
//! RBAC to read both (a Group binding in the shared namespace, a RoleBinding in its
//! own). For each N, in the same run:
//!
//! 1. **the floor**: N bare clients, each with its own token, list both namespaces as
//!    Tables (what `kubectl get` asks for) and watch them from the list's version;
//! 2. **Portico**: N people sign in with their tokens (each from an address of their
//!    own, behind one proxy hop) and open one live connection each, viewing the shared
//!    table and their own.
//!
//! People open their views 16 at a time, in order. Then BENCH_RATE writes a second
//! change objects of the shared namespace for BENCH_SECONDS. Printed per phase:
//! first rows and the whole table for the N-th person, upstream watches and lists on
//! the API server, write-to-viewer latency, deliveries lost, the RSS and CPU of
//! Portico and of the API server, and Portico's per-person bounds beside what each
//! person used.
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use kube::core::WatchEvent;
use portico_control_plane::{ControlPlane, apply};
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic};
use portico_core::table::wire::TableQuery;
use serde::Deserialize;
use serde_json::json;

const SHARED: &str = "shared";
/// Where the people's ServiceAccounts live.
const PEOPLE: &str = "people";
const GROUP: &str = "iksoon.test.com";
const PLURAL: &str = "crdplural";
const OWN_OBJECTS: usize = 3;
/// People opening their views at once.
const IN_FLIGHT: usize = 16;
/// How long the last deliveries may take after the last write.
const DRAIN: Duration = Duration::from_secs(60);

fn objects(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &kit::crd_kind_resource())
}

fn object(i: usize) -> DynamicObject {
    let choice = if i.is_multiple_of(2) {
        "mysql"
    } else {
        "tomcat"
    };
    kit::crd_kind(json!({"name": format!("obj-{i:05}")}), choice, 1)
}

fn person(i: usize) -> String {
    format!("p-{i:04}")
}

fn own_namespace(i: usize) -> String {
    format!("own-{i:04}")
}

/// The writes of a run and what every viewer has received of them. Write `w`
/// changes object `w` of the shared namespace, once, so any version of it newer than
/// its creation is that write.
struct Writes {
    count: usize,
    /// The resourceVersion each object was created with.
    created: Vec<u64>,
    /// When write `w` was sent, in nanoseconds after `base` (0: not yet).
    sent: Vec<AtomicU64>,
    base: Instant,
    /// Milliseconds from a write sent to a viewer holding it, per delivery.
    latencies: Mutex<Vec<f64>>,
    /// Writes viewers hold, all viewers together, and those that came in a snapshot.
    held: AtomicUsize,
    in_snapshots: AtomicUsize,
}

impl Writes {
    fn new(count: usize, created: Vec<u64>) -> Self {
        Self {
            count,
            created,
            sent: (0..count).map(|_| AtomicU64::new(0)).collect(),
            base: Instant::now(),
            latencies: Mutex::new(Vec::new()),
            held: AtomicUsize::new(0),
            in_snapshots: AtomicUsize::new(0),
        }
    }
}

/// One viewer's record of the writes it holds.
struct Seen {
    writes: Arc<Writes>,
    held: Vec<bool>,
}

impl Seen {
    fn new(writes: &Arc<Writes>) -> Self {
        Self {
            writes: writes.clone(),
            held: vec![false; writes.count],
        }
    }

    /// A row of the shared namespace arrived, as a change or in a snapshot.
    fn row(&mut self, name: &str, resource_version: &str, in_snapshot: bool) {
        let Some(w) = name
            .strip_prefix("obj-")
            .and_then(|n| n.parse::<usize>().ok())
        else {
            return;
        };
        let (Some(held), Ok(rv)) = (self.held.get_mut(w), resource_version.parse::<u64>()) else {
            return;
        };
        if *held || rv <= self.writes.created[w] {
            return;
        }
        *held = true;
        self.writes.held.fetch_add(1, Ordering::Relaxed);
        if in_snapshot {
            self.writes.in_snapshots.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let sent = self.writes.sent[w].load(Ordering::Relaxed);
        if sent > 0 {
            let now = self.writes.base.elapsed().as_nanos() as u64;
            self.writes
                .latencies
                .lock()
                .expect("lock")
                .push(now.saturating_sub(sent) as f64 / 1e6);
        }
    }
}

/// When a viewer saw its first rows of the shared table, and the whole of it.
#[derive(Clone, Copy)]
struct Opened {
    first_rows: Duration,
    whole: Duration,
}

/// A Table as the API server sends it, reduced to what the floor reads.
#[derive(Clone, Deserialize)]
struct Table {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(default)]
    rows: Vec<TableRow>,
}

#[derive(Clone, Default, Deserialize)]
struct ListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: String,
}

#[derive(Clone, Deserialize)]
struct TableRow {
    object: RowObject,
}

#[derive(Clone, Deserialize)]
struct RowObject {
    metadata: RowMeta,
}

#[derive(Clone, Deserialize)]
struct RowMeta {
    name: String,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

fn table_request(ns: &str, watch_from: Option<&str>) -> http::Request<Vec<u8>> {
    let mut path = format!("/apis/{GROUP}/v1/namespaces/{ns}/{PLURAL}?includeObject=Metadata");
    if let Some(rv) = watch_from {
        path.push_str(&format!(
            "&watch=true&allowWatchBookmarks=true&resourceVersion={rv}"
        ));
    }
    http::Request::get(path)
        .header("accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
        .body(Vec::new())
        .expect("request")
}

/// The floor for one person: list both namespaces as Tables, then watch them; the
/// shared watch's rows go to `seen`. Returns when the shared list is whole.
async fn bare_viewer(
    client: kube::Client,
    own: String,
    mut seen: Seen,
    tasks: &Mutex<Vec<tokio::task::JoinHandle<()>>>,
) -> Opened {
    let started = Instant::now();
    let shared: Table = client
        .request(table_request(SHARED, None))
        .await
        .expect("shared list");
    let whole = started.elapsed();
    for row in &shared.rows {
        seen.row(
            &row.object.metadata.name,
            &row.object.metadata.resource_version,
            true,
        );
    }
    let mine: Table = client
        .request(table_request(&own, None))
        .await
        .expect("own list");
    assert_eq!(mine.rows.len(), OWN_OBJECTS);
    let shared_events = client
        .request_events::<Table>(table_request(
            SHARED,
            Some(&shared.metadata.resource_version),
        ))
        .await
        .expect("shared watch");
    let own_events = client
        .request_events::<Table>(table_request(&own, Some(&mine.metadata.resource_version)))
        .await
        .expect("own watch");
    let follow = tokio::spawn(async move {
        let mut own_events = std::pin::pin!(own_events);
        let mut shared_events = std::pin::pin!(shared_events);
        loop {
            tokio::select! {
                event = shared_events.next() => match event {
                    Some(Ok(WatchEvent::Added(t) | WatchEvent::Modified(t))) => {
                        for row in &t.rows {
                            seen.row(&row.object.metadata.name, &row.object.metadata.resource_version, false);
                        }
                    }
                    Some(_) => {}
                    None => return,
                },
                _ = own_events.next() => {}
            }
        }
    });
    tasks.lock().expect("lock").push(follow);
    Opened {
        first_rows: whole,
        whole,
    }
}

/// Portico for one person: one live connection with the shared table and their own.
/// Returns when the shared table is whole.
async fn portico_viewer(
    origin: String,
    cookie: String,
    own: String,
    mut seen: Seen,
    tasks: &Mutex<Vec<tokio::task::JoinHandle<()>>>,
    refused: Arc<AtomicUsize>,
) -> Opened {
    let started = Instant::now();
    let mut socket =
        kit::socket::connect(&origin, kit::socket::LIVE, Some(&cookie), Some(&origin)).await;
    for (id, namespace) in [(1, SHARED.to_string()), (2, own)] {
        let subscribe = ClientMessage::Subscribe {
            id,
            topic: Topic::Table {
                query: TableQuery {
                    group: GROUP.into(),
                    version: "v1".into(),
                    plural: PLURAL.into(),
                    namespace: Some(namespace),
                    label_selector: None,
                    field_selector: None,
                    columns: None,
                },
            },
            resume: None,
        };
        kit::socket::send_json(&mut socket, &subscribe).await;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let follow = tokio::spawn(async move {
        let mut opened = Some((tx, None::<Duration>));
        while let Some(frame) = kit::socket::next_frame(&mut socket).await {
            let kit::socket::Frame::Text(text) = frame else {
                continue;
            };
            let message: ServerMessage = serde_json::from_str(&text).expect("a message");
            match message {
                ServerMessage::Snapshot {
                    id: 1,
                    table,
                    complete,
                    ..
                } => {
                    for row in &table.rows {
                        seen.row(&row.name, &row.resource_version, true);
                    }
                    if let Some((_, first)) = &mut opened {
                        first.get_or_insert(started.elapsed());
                    }
                    if complete && let Some((tx, first)) = opened.take() {
                        let whole = started.elapsed();
                        let _ = tx.send(Opened {
                            first_rows: first.unwrap_or(whole),
                            whole,
                        });
                    }
                }
                ServerMessage::Rows {
                    id: 1,
                    rows,
                    complete,
                } => {
                    for row in &rows {
                        seen.row(&row.name, &row.resource_version, true);
                    }
                    if complete && let Some((tx, first)) = opened.take() {
                        let whole = started.elapsed();
                        let _ = tx.send(Opened {
                            first_rows: first.unwrap_or(whole),
                            whole,
                        });
                    }
                }
                ServerMessage::Delta { id: 1, delta, .. } => {
                    for row in &delta.upserts {
                        seen.row(&row.name, &row.resource_version, false);
                    }
                }
                ServerMessage::Refused { message, .. } | ServerMessage::Problem { message, .. } => {
                    eprintln!("a view was refused: {message}");
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    });
    tasks.lock().expect("lock").push(follow);
    rx.await.expect("the shared table, whole")
}

/// `apiserver_request_total` for LISTs of the CRD, and the WATCHes open on it now.
async fn api_counts(client: &kube::Client) -> (f64, f64) {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client.request_text(request).await.unwrap_or_default();
    let sum = |prefix: &str, verb: &str| -> f64 {
        text.lines()
            .filter(|l| {
                l.starts_with(prefix)
                    && l.contains(&format!("verb=\"{verb}\""))
                    && l.contains(&format!("resource=\"{PLURAL}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    (
        sum("apiserver_request_total{", "LIST"),
        sum("apiserver_longrunning_requests{", "WATCH"),
    )
}

/// Sends `writes.count` writes at `rate` a second, then waits until every viewer
/// holds every write (or [`DRAIN`] passes). Returns how long the drain took.
async fn write_and_drain(
    client: &kube::Client,
    writes: &Arc<Writes>,
    rate: usize,
    viewers: usize,
) -> Duration {
    let api = objects(client, SHARED);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    let mut pending = Vec::new();
    for w in 0..writes.count {
        tick.tick().await;
        writes.sent[w].store(
            writes.base.elapsed().as_nanos().max(1) as u64,
            Ordering::Relaxed,
        );
        let api = api.clone();
        pending.push(tokio::spawn(async move {
            let patch = json!({"spec": {"replicas": 2 + (w % 9)}});
            api.patch(
                &format!("obj-{w:05}"),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
            .expect("write");
        }));
    }
    for p in pending {
        p.await.expect("join");
    }
    let drain = Instant::now();
    let expected = writes.count * viewers;
    while writes.held.load(Ordering::Relaxed) < expected && drain.elapsed() < DRAIN {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drain.elapsed()
}

struct Phase {
    opened: Vec<Opened>,
    open_all: Duration,
    lists: f64,
    watches: f64,
    writes: Arc<Writes>,
    drain: Duration,
    /// (RSS now, peak, CPU seconds) of Portico, when it ran.
    portico: Option<(f64, f64, f64)>,
    /// The API server's RSS after, and the CPU seconds it spent in the phase.
    apiserver: (f64, f64),
    /// Portico's connections to the API server at the end, when it ran.
    connections: Option<usize>,
    refused: usize,
}

fn report(label: &str, n: usize, phase: &Phase) {
    let nth = phase.opened.last().copied().expect("viewers");
    let mut whole: Vec<f64> = phase
        .opened
        .iter()
        .map(|o| o.whole.as_secs_f64() * 1000.0)
        .collect();
    whole.sort_by(f64::total_cmp);
    let mut latencies = phase.writes.latencies.lock().expect("lock").clone();
    latencies.sort_by(f64::total_cmp);
    let expected = phase.writes.count * n;
    let held = phase.writes.held.load(Ordering::Relaxed);
    println!("  {label}:");
    println!(
        "    the N-th person: first rows {:.0} ms, whole table {:.0} ms (every person: p50 {:.0} ms, max {:.0} ms); all {n} open after {:.1} s",
        nth.first_rows.as_secs_f64() * 1000.0,
        nth.whole.as_secs_f64() * 1000.0,
        kit::percentile(&whole, 0.5),
        whole.last().copied().unwrap_or(f64::NAN),
        phase.open_all.as_secs_f64()
    );
    println!(
        "    on the API server: {:.0} LISTs of the resource, {:.0} WATCHes open on it",
        phase.lists, phase.watches
    );
    println!(
        "    write → viewer: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} deliveries; drained {:.1} s after the last write)",
        kit::percentile(&latencies, 0.5),
        kit::percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(f64::NAN),
        latencies.len(),
        phase.drain.as_secs_f64()
    );
    println!(
        "    deliveries: {held} of {expected} ({} in a snapshot after falling behind); lost: {}; views refused: {}",
        phase.writes.in_snapshots.load(Ordering::Relaxed),
        expected - held,
        phase.refused
    );
    if let Some((rss, peak, cpu)) = phase.portico {
        println!("    Portico: RSS {rss:.0} MB now, {peak:.0} MB peak; CPU {cpu:.1} s");
    }
    if let Some(connections) = phase.connections {
        println!("    Portico's connections to the API server: {connections}");
    }
    println!(
        "    kube-apiserver: RSS {:.0} MB; CPU {:.1} s in this phase",
        phase.apiserver.0, phase.apiserver.1
    );
}

struct Cluster {
    plane: ControlPlane,
    admin: kube::Client,
    tokens: Vec<String>,
    created: Vec<u64>,
    apiserver: u32,
    /// The API server's port.
    port: u16,
}

async fn cluster(people: usize, shared: usize) -> Cluster {
    let (plane, admin) = kit::plane_with_crd_kind().await;
    let apiserver = kit::pid_of("kube-apiserver", &plane.dir().to_string_lossy())
        .expect("the API server's pid");

    kit::create_namespace(&admin, SHARED).await;
    kit::create_namespace(&admin, PEOPLE).await;
    let started = Instant::now();
    let api = objects(&admin, SHARED);
    let mut created: Vec<(usize, u64)> = futures::stream::iter(0..shared)
        .map(|i| {
            let api = api.clone();
            async move {
                let made = api
                    .create(&PostParams::default(), &object(i))
                    .await
                    .expect("create");
                let rv = made.metadata.resource_version.expect("version");
                (i, rv.parse().expect("a numeric version"))
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    created.sort_unstable();
    println!(
        "created {shared} objects in the shared namespace in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let rbac = vec![
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "crd-reader"},
            "rules": [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "people-read", "namespace": SHARED},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crd-reader"},
            "subjects": [{"kind": "Group", "name": format!("system:serviceaccounts:{PEOPLE}"), "apiGroup": "rbac.authorization.k8s.io"}]}),
    ];
    apply::apply_all(
        &admin,
        rbac.into_iter()
            .map(|v| serde_json::from_value(v).expect("rbac"))
            .collect(),
    )
    .await
    .expect("RBAC applies");

    let started = Instant::now();
    let mut tokens: Vec<(usize, String)> = futures::stream::iter(0..people)
        .map(|i| {
            let admin = admin.clone();
            async move {
                let own = own_namespace(i);
                kit::create_namespace(&admin, &own).await;
                let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "own-read", "namespace": own},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crd-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": person(i), "namespace": PEOPLE}]});
                apply::apply_all(&admin, vec![serde_json::from_value(binding).expect("binding")])
                    .await
                    .expect("binding applies");
                let api = objects(&admin, &own);
                for o in 0..OWN_OBJECTS {
                    api.create(&PostParams::default(), &object(o))
                        .await
                        .expect("own object");
                }
                (i, kit::account_token(&admin, PEOPLE, &person(i)).await)
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;
    tokens.sort_unstable();
    let last = people - 1;
    kit::until_subject_may(
        &admin,
        (&kit::account_user(PEOPLE, &person(last)), &[]),
        "watch",
        (GROUP, PLURAL),
        Some(&own_namespace(last)),
    )
    .await;
    println!(
        "{people} people (ServiceAccount, token, own namespace of {OWN_OBJECTS}, RBAC) in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let port = plane
        .server_url()
        .rsplit_once(':')
        .and_then(|(_, port)| port.trim_end_matches('/').parse().ok())
        .expect("the API server's port");
    Cluster {
        plane,
        admin,
        tokens: tokens.into_iter().map(|(_, t)| t).collect(),
        created: created.into_iter().map(|(_, rv)| rv).collect(),
        apiserver,
        port,
    }
}

/// What a person viewing the shared table and their own is charged against their
/// live-table budget: Portico's own measure of the rows, as if nothing were shared.
async fn charged_mib(admin: &kube::Client) -> f64 {
    use portico_server::live::rows::sizes::row_bytes;
    use portico_server::live::upstream::table_api;
    let query = |namespace: &str| TableQuery {
        group: GROUP.into(),
        version: "v1".into(),
        plural: PLURAL.into(),
        namespace: Some(namespace.into()),
        label_selector: None,
        field_selector: None,
        columns: None,
    };
    let mut bytes = 0;
    for namespace in [SHARED.to_string(), own_namespace(0)] {
        let page = table_api::list(admin, &query(&namespace), 100_000, None, None)
            .await
            .expect("list");
        bytes += page.table.rows.iter().map(|r| row_bytes(r)).sum::<usize>();
    }
    bytes as f64 / f64::from(1 << 20)
}

/// A client acting as the person with `token`, and nothing else.
async fn client_for(cluster: &Cluster, token: &str) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(cluster.plane.admin_kubeconfig()).expect("kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("config");
    config.auth_info = AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    kube::Client::try_from(config).expect("client")
}

/// Opens `n` viewers with `open`, [`IN_FLIGHT`] at a time in order, and returns
/// their opening times in that order.
async fn open_all<F, Fut>(n: usize, open: F) -> (Vec<Opened>, Duration)
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Opened>,
{
    let started = Instant::now();
    let opened = futures::stream::iter(0..n)
        .map(open)
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    (opened, started.elapsed())
}

async fn floor_phase(cluster: &Cluster, n: usize, rate: usize, seconds: usize) -> Phase {
    let writes = Arc::new(Writes::new(rate * seconds, cluster.created.clone()));
    let (lists_before, _) = api_counts(&cluster.admin).await;
    let cpu_before = kit::cpu_seconds(cluster.apiserver);
    let tasks = Mutex::new(Vec::new());
    let mut clients = Vec::new();
    for token in &cluster.tokens[..n] {
        clients.push(client_for(cluster, token).await);
    }
    let (opened, open_all) = open_all(n, |i| {
        bare_viewer(
            clients[i].clone(),
            own_namespace(i),
            Seen::new(&writes),
            &tasks,
        )
    })
    .await;
    let drain = write_and_drain(&cluster.admin, &writes, rate, n).await;
    let (lists_after, watches) = api_counts(&cluster.admin).await;
    let phase = Phase {
        opened,
        open_all,
        lists: lists_after - lists_before,
        watches,
        writes,
        drain,
        portico: None,
        apiserver: (
            kit::rss_mb(cluster.apiserver, "VmRSS:"),
            kit::cpu_seconds(cluster.apiserver) - cpu_before,
        ),
        refused: 0,
        connections: None,
    };
    for task in tasks.into_inner().expect("lock") {
        task.abort();
    }
    phase
}

fn start_portico(cluster: &Cluster, protocol: &str) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    // BENCH_PORTICO_WRAP runs Portico under a profiler (e.g. `heaptrack -o /tmp/p`);
    // its RSS and CPU are then the wrapper's.
    let wrap = std::env::var("BENCH_PORTICO_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut command = Command::new(program);
            command.args(words).arg(env!("CARGO_BIN_EXE_portico"));
            command
        }
        None => Command::new(env!("CARGO_BIN_EXE_portico")),
    };
    command
        .env("KUBECONFIG", cluster.plane.admin_kubeconfig())
        .env("PORTICO_LISTEN", format!("127.0.0.1:{port}"))
        .env("PORTICO_IDENTITY", "token")
        .env("PORTICO_API_PROTOCOL", protocol)
        // People reach it through one proxy (each from an address of their own), as
        // behind an Ingress; sign-in attempts are counted per address.
        .env("PORTICO_FORWARDED_HOPS", "1")
        .env("PORTICO_RECONCILER", "off")
        .env("PORTICO_LOG", kit::process::portico_log())
        .stdout(Stdio::null());
    let server =
        kit::process::spawn_reading_stderr(&mut command, |line| eprintln!("[portico] {line}"));
    (server, format!("http://127.0.0.1:{port}"))
}

async fn portico_phase(
    cluster: &Cluster,
    n: usize,
    (rate, seconds): (usize, usize),
    protocol: &str,
) -> Phase {
    let (mut server, origin) = start_portico(cluster, protocol);
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    kit::process::until_ready(&http, &origin).await;
    let started = Instant::now();
    let cookies: Vec<String> = futures::stream::iter(0..n)
        .map(|i| {
            let address = format!("10.{}.{}.1", i / 256, i % 256);
            let (http, origin, token) = (&http, &origin, &cluster.tokens[i]);
            async move { kit::sign_in_from(http, origin, token, Some(&address)).await }
        })
        .buffered(IN_FLIGHT)
        .collect()
        .await;
    println!(
        "  {n} people signed in to Portico in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let writes = Arc::new(Writes::new(rate * seconds, cluster.created.clone()));
    let (lists_before, _) = api_counts(&cluster.admin).await;
    let cpu_before = kit::cpu_seconds(cluster.apiserver);
    let portico_cpu_before = kit::cpu_seconds(server.id());
    let tasks = Mutex::new(Vec::new());
    let refused = Arc::new(AtomicUsize::new(0));
    let (opened, open_all) = open_all(n, |i| {
        portico_viewer(
            origin.clone(),
            cookies[i].clone(),
            own_namespace(i),
            Seen::new(&writes),
            &tasks,
            refused.clone(),
        )
    })
    .await;
    let drain = write_and_drain(&cluster.admin, &writes, rate, n).await;
    let (lists_after, watches) = api_counts(&cluster.admin).await;
    let phase = Phase {
        opened,
        open_all,
        lists: lists_after - lists_before,
        watches,
        writes,
        drain,
        portico: Some((
            kit::rss_mb(server.id(), "VmRSS:"),
            kit::rss_mb(server.id(), "VmHWM:"),
            kit::cpu_seconds(server.id()) - portico_cpu_before,
        )),
        apiserver: (
            kit::rss_mb(cluster.apiserver, "VmRSS:"),
            kit::cpu_seconds(cluster.apiserver) - cpu_before,
        ),
        refused: refused.load(Ordering::Relaxed),
        connections: Some(kit::tcp_connections_to(server.id(), cluster.port)),
    };
    for task in tasks.into_inner().expect("lock") {
        task.abort();
    }
    stop_portico(&mut server);
    phase
}

/// Stops Portico as a signal from its orchestrator would (a profiler wrapping it
/// then writes its report).
fn stop_portico(server: &mut Child) {
    let portico = env!("CARGO_BIN_EXE_portico");
    let pid = std::fs::read_dir("/proc").ok().and_then(|entries| {
        entries.flatten().find_map(|entry| {
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let program = cmdline.split(|b| *b == 0).next()?;
            (program == portico.as_bytes()).then(|| entry.file_name())
        })
    });
    match pid {
        Some(pid) => {
            let _ = Command::new("kill").arg("-TERM").arg(pid).status();
        }
        None => {
            let _ = server.kill();
        }
    }
    let _ = server.wait();
}

/// Puts every written object back as created, so the next phase's writes are new.
async fn reset_writes(cluster: &mut Cluster, count: usize) {
    let api = objects(&cluster.admin, SHARED);
    let versions: HashMap<usize, u64> = futures::stream::iter(0..count)
        .map(|w| {
            let api = api.clone();
            async move {
                let patch = json!({"spec": {"replicas": 1}});
                let made = api
                    .patch(
                        &format!("obj-{w:05}"),
                        &PatchParams::default(),
                        &Patch::Merge(patch),
                    )
                    .await
                    .expect("reset");
                let rv = made.metadata.resource_version.expect("version");
                (w, rv.parse().expect("a numeric version"))
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for (w, rv) in versions {
        cluster.created[w] = rv;
    }
}

#[tokio::main]
async fn main() {
    let counts: Vec<usize> = std::env::var("BENCH_IDENTITIES")
        .unwrap_or_else(|_| "100,300,1000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let shared = kit::env_or("BENCH_OBJECTS", 10_000);
    let rate = kit::env_or("BENCH_RATE", 100);
    let seconds = kit::env_or("BENCH_SECONDS", 20);
    assert!(
        rate * seconds <= shared,
        "each write changes its own object"
    );
    let most = counts.iter().copied().max().expect("a count");
    let mut cluster = cluster(most, shared).await;
    println!(
        "Portico's bounds (defaults): 64 live views, 32 live connections, 512 watches and 64 MiB of live tables per person; 4,096 views, 20,000 watches and 256 MiB of live tables in all"
    );
    let charged = charged_mib(&cluster.admin).await;
    println!(
        "each person uses: 1 live connection, 2 live views, 2 watches, and {shared} + {OWN_OBJECTS} rows, charged as if unshared: {charged:.1} MiB"
    );
    for &n in &counts {
        println!("N = {n} people, {rate} writes/s for {seconds} s to the shared namespace:");
        // BENCH_FLOOR=0 leaves the floor out (profiling Portico alone).
        if kit::env_or("BENCH_FLOOR", 1) != 0 {
            let floor = floor_phase(&cluster, n, rate, seconds).await;
            report(
                "floor (bare clients: the same lists and watches)",
                n,
                &floor,
            );
            reset_writes(&mut cluster, rate * seconds).await;
        }
        // BENCH_PROTOCOLS=http2,http1 measures Portico both ways in one run.
        let protocols = std::env::var("BENCH_PROTOCOLS").unwrap_or_else(|_| "http2".into());
        for protocol in protocols.split(',').map(str::trim) {
            let portico = portico_phase(&cluster, n, (rate, seconds), protocol).await;
            report(
                &format!(
                    "Portico (token mode, one live connection each; {protocol} to the API server)"
                ),
                n,
                &portico,
            );
            reset_writes(&mut cluster, rate * seconds).await;
        }
    }
}
