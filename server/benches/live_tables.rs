//! Benchmark of the live-table path, against a real kube-apiserver and the real
//! `portico` binary. Prints its figures; run with
//! `cargo bench -p server --bench live_tables` (env BENCH_OBJECTS, BENCH_VIEWERS,
//! BENCH_RATE, BENCH_SECONDS change the load; BENCH_TRANSPORT=sse measures the SSE
//! routes instead of the browser's WebSocket).
//!
//! 1. N objects of one CRD; time until a new viewer holds the complete table
//!    (connect → every part of the snapshot parsed), cold (upstream list) and warm
//!    (shared feed).
//! 2. V concurrent viewers, each on its own connection, while R updates/s are written
//!    for S seconds:
//!    write-to-viewer latency p50/p99/max, upstream watches on the API server,
//!    the server's RSS.
//! 3. The same table with two columns added by JSONPath (kubectl's custom-columns):
//!    complete table cold and warm beside the plain table's, and the floors (`kubectl
//!    get -o custom-columns` with the same spec; the raw Table list of whole objects);
//!    then the viewer's work on it: rows in, sorted by an added column, filtered by
//!    another (the browser's code, run natively here).
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{DynamicObject, Patch, PatchParams};
use portico_control_plane::ControlPlane;
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic};
use portico_core::table::wire::{TableDelta, TableQuery, TableSnapshot};

fn object(i: usize) -> DynamicObject {
    let choice = if i.is_multiple_of(2) {
        "mysql"
    } else {
        "tomcat"
    };
    kit::crd_kind(
        serde_json::json!({"name": format!("obj-{i:05}")}),
        choice,
        1,
    )
}

/// What a viewer received: the whole table (and its size in bytes), or a delta.
enum Got {
    Table(TableSnapshot, usize),
    Delta(TableDelta),
}

/// The transport a viewer uses: the tab's WebSocket, or the SSE route.
#[derive(Clone, Copy, PartialEq)]
enum Transport {
    Socket,
    Sse,
}

/// One viewer's connection, subscribed to the table.
enum Viewer {
    Socket(Box<kit::socket::Socket>),
    Sse(SseReader),
}

impl Viewer {
    async fn open(
        transport: Transport,
        http: &reqwest::Client,
        base: &str,
        query: &TableQuery,
    ) -> Self {
        match transport {
            Transport::Sse => Self::Sse(SseReader::new(
                http.get(format!("{base}/api/live/table?{}", query.to_query_string()))
                    .send()
                    .await
                    .and_then(reqwest::Response::error_for_status)
                    .expect("viewer admitted"),
            )),
            Transport::Socket => {
                let mut socket = kit::socket::connect(base, kit::socket::LIVE, None, None).await;
                let subscribe = ClientMessage::Subscribe {
                    id: 1,
                    topic: Topic::Table {
                        query: query.clone(),
                    },
                    resume: None,
                };
                kit::socket::send_json(&mut socket, &subscribe).await;
                Self::Socket(Box::new(socket))
            }
        }
    }

    async fn next(&mut self) -> Option<Got> {
        match self {
            Self::Sse(reader) => loop {
                let (name, data) = reader.next().await?;
                match name.as_str() {
                    "snapshot" => {
                        let table = serde_json::from_str(&data).expect("snapshot");
                        return Some(Got::Table(table, data.len()));
                    }
                    "delta" => {
                        return Some(Got::Delta(serde_json::from_str(&data).expect("delta")));
                    }
                    _ => continue,
                }
            },
            Self::Socket(socket) => {
                let mut partial: Option<(TableSnapshot, usize)> = None;
                loop {
                    let kit::socket::Frame::Text(text) = kit::socket::next_frame(socket).await?
                    else {
                        continue;
                    };
                    match serde_json::from_str::<ServerMessage>(&text).expect("message") {
                        ServerMessage::Snapshot {
                            table, complete, ..
                        } => {
                            if complete {
                                return Some(Got::Table(table, text.len()));
                            }
                            partial = Some((table, text.len()));
                        }
                        ServerMessage::Rows { rows, complete, .. } => {
                            let (mut table, bytes) = partial.take().expect("rows after a snapshot");
                            table.rows.extend(rows);
                            let bytes = bytes + text.len();
                            if complete {
                                return Some(Got::Table(table, bytes));
                            }
                            partial = Some((table, bytes));
                        }
                        ServerMessage::Delta { delta, .. } => return Some(Got::Delta(delta)),
                        _ => continue,
                    }
                }
            }
        }
    }
}

/// Reads SSE events (name, data) from a streaming response.
struct SseReader {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    buf: String,
    /// Where the search for the next blank line resumes (no rescans of a large snapshot).
    scanned: usize,
}
impl SseReader {
    fn new(resp: reqwest::Response) -> Self {
        Self {
            body: Box::pin(resp.bytes_stream()),
            buf: String::new(),
            scanned: 0,
        }
    }

    async fn next(&mut self) -> Option<(String, String)> {
        loop {
            if let Some(end) = self.buf[self.scanned..]
                .find("\n\n")
                .map(|i| i + self.scanned)
            {
                let block: String = self.buf.drain(..end + 2).collect();
                self.scanned = 0;
                let (mut name, mut data) = (String::from("message"), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        name = v.trim().to_string();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if data.is_empty() {
                    continue; // keep-alive comment
                }
                return Some((name, data));
            }
            self.scanned = self.buf.len().saturating_sub(1);
            let chunk = self.body.next().await?.ok()?;
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// When a write was sent, and when the API server acknowledged it.
type WriteTimes = (Instant, Option<Instant>);
/// Milliseconds from a write being sent, and from its acknowledgement, to a viewer.
type Latency = (f64, Option<f64>);

async fn upstream_watches(client: &kube::Client) -> String {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = client.request_text(req).await.unwrap_or_default();
    let count: f64 = text
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_longrunning_requests{")
                && l.contains("verb=\"WATCH\"")
                && l.contains("resource=\"crdplural\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    format!("{count}")
}

/// Writes sent, by object name: when each was sent, and when the API server
/// acknowledged it.
type Sent = Arc<Mutex<HashMap<String, WriteTimes>>>;

/// The `portico` binary against `plane` on a free loopback port, allowing `viewers`
/// live views and sockets (and a few more); once it answers: the process, a client for
/// it, and its origin.
async fn start_portal(
    plane: &ControlPlane,
    viewers: usize,
) -> (std::process::Child, reqwest::Client, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("port")
        .local_addr()
        .expect("addr")
        .port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
    command
        .env("KUBECONFIG", plane.admin_kubeconfig())
        .env("PORTICO_LISTEN", format!("127.0.0.1:{port}"))
        // Local mode: every simulated viewer is the same identity, which Portico
        // otherwise limits to 64 open live views.
        .env(
            "PORTICO_MAX_LIVE_VIEWS_PER_PERSON",
            (viewers + 8).to_string(),
        )
        // And to 32 live sockets.
        .env(
            "PORTICO_MAX_LIVE_SOCKETS_PER_PERSON",
            (viewers + 8).to_string(),
        )
        .env("PORTICO_LOG", kit::process::portico_log())
        .stdout(Stdio::null());
    let server =
        kit::process::spawn_reading_stderr(&mut command, |line| eprintln!("[portico] {line}"));
    let http = reqwest::Client::builder().no_proxy().build().expect("http");
    let base = format!("http://127.0.0.1:{port}");
    kit::process::until_ready(&http, &base).await;
    (server, http, base)
}

/// The transport BENCH_TRANSPORT names (the WebSocket unless `sse`), announced.
fn chosen_transport() -> Transport {
    let transport = match std::env::var("BENCH_TRANSPORT").as_deref() {
        Ok("sse") => Transport::Sse,
        _ => Transport::Socket,
    };
    println!(
        "transport: {}",
        if transport == Transport::Sse {
            "SSE (/api/live/table)"
        } else {
            "WebSocket (/api/live)"
        }
    );
    transport
}

/// Part 1: a new viewer's time to the complete table of `objects` rows, cold (the
/// first, which lists upstream) and warm (the others, while the first ones hold the
/// shared feed open).
async fn complete_table(
    transport: Transport,
    http: &reqwest::Client,
    base: &str,
    query: &TableQuery,
    objects: usize,
) {
    let mut keep = Vec::new();
    for round in 0..4 {
        let t = Instant::now();
        let mut reader = Viewer::open(transport, http, base, query).await;
        let Some(Got::Table(snapshot, bytes)) = reader.next().await else {
            panic!("a snapshot first");
        };
        assert_eq!(snapshot.rows.len(), objects);
        let label = if round == 0 {
            "cold (upstream list)"
        } else {
            "warm (shared feed)"
        };
        println!(
            "complete table, {label}: {:.0} ms ({} rows, {:.1} MB of JSON)",
            t.elapsed().as_secs_f64() * 1000.0,
            snapshot.rows.len(),
            bytes as f64 / 1e6
        );
        keep.push(reader); // hold the feed open so later rounds are warm
    }
    drop(keep);
}

/// Part 2's viewers: `viewers` of them, each on its own connection; returns once each
/// holds its snapshot. Each then times every row of its deltas from the write `sent`
/// for it into `latencies`.
async fn connect_viewers(
    viewers: usize,
    transport: Transport,
    http: &reqwest::Client,
    base: &str,
    query: &TableQuery,
    sent: &Sent,
    latencies: &Arc<Mutex<Vec<Latency>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let connect = Instant::now();
    let mut tasks = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(viewers);
    for _ in 0..viewers {
        let (http, base, query, sent, latencies, ready) = (
            http.clone(),
            base.to_string(),
            query.clone(),
            sent.clone(),
            latencies.clone(),
            ready_tx.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut reader = Viewer::open(transport, &http, &base, &query).await;
            let _ = reader.next().await; // snapshot
            let _ = ready.send(()).await;
            while let Some(got) = reader.next().await {
                let Got::Delta(delta) = got else {
                    continue;
                };
                let now = Instant::now();
                let sent = sent.lock().expect("lock");
                let mut lat = latencies.lock().expect("lock");
                for row in delta.upserts {
                    if let Some((t, ack)) = sent.get(&row.name) {
                        let since_ack = ack.map(|a| {
                            if now >= a {
                                now.duration_since(a).as_secs_f64() * 1000.0
                            } else {
                                -(a.duration_since(now).as_secs_f64() * 1000.0)
                            }
                        });
                        lat.push((now.duration_since(*t).as_secs_f64() * 1000.0, since_ack));
                    }
                }
            }
        }));
    }
    for _ in 0..viewers {
        ready_rx.recv().await.expect("viewer ready");
    }
    println!(
        "{viewers} viewers connected with their snapshots in {:.1}s",
        connect.elapsed().as_secs_f64()
    );
    tasks
}

/// Part 2's load: `updates` patches at `rate` a second, each noted in `sent` when sent
/// and when acknowledged; the count acknowledged so far.
async fn send_updates(
    api: &kube::Api<DynamicObject>,
    sent: &Sent,
    objects: usize,
    rate: usize,
    updates: usize,
) -> Arc<std::sync::atomic::AtomicUsize> {
    let acked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let mut tick = tokio::time::interval(interval);
    let load = Instant::now();
    for i in 0..updates {
        tick.tick().await;
        let (api, sent) = (api.clone(), sent.clone());
        // Each object is written at most once per run (updates <= objects), so its
        // name identifies the write; replicas always changes (created with 1).
        let name = format!("obj-{:05}", i % objects);
        sent.lock()
            .expect("lock")
            .insert(name.clone(), (Instant::now(), None));
        let acked = acked.clone();
        tokio::spawn(async move {
            let patch = serde_json::json!({"spec": {"replicas": 2 + (i % 9)}});
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => {
                    if let Some(entry) = sent.lock().expect("lock").get_mut(&name) {
                        entry.1 = Some(Instant::now());
                    }
                    acked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                Err(e) => eprintln!("patch {name}: {e}"),
            }
        });
    }
    println!(
        "sent {updates} updates in {:.1}s; {} acknowledged by then",
        load.elapsed().as_secs_f64(),
        acked.load(std::sync::atomic::Ordering::Relaxed)
    );
    acked
}

/// Part 2's figures, once the last events have drained (for at most a minute): the
/// `expected` deliveries' latencies, the upstream watches, and the RSS of the portal
/// (process `pid`).
async fn print_fan_out(
    client: &kube::Client,
    pid: u32,
    latencies: &Mutex<Vec<Latency>>,
    acked: &std::sync::atomic::AtomicUsize,
    expected: usize,
) {
    let drain = Instant::now();
    while latencies.lock().expect("lock").len() < expected
        && drain.elapsed() < Duration::from_secs(60)
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "drained {:.1}s after the last write was sent ({} acknowledged)",
        drain.elapsed().as_secs_f64(),
        acked.load(std::sync::atomic::Ordering::Relaxed)
    );
    let watches = upstream_watches(client).await;
    let rss = kit::rss_mb(pid, "VmRSS:");
    let hwm = kit::rss_mb(pid, "VmHWM:");
    let all = latencies.lock().expect("lock").clone();
    let sort = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v
    };
    let from_send = sort(all.iter().map(|(s, _)| *s).collect());
    let from_ack = sort(all.iter().filter_map(|(_, a)| *a).collect());
    println!("deliveries: {} of {expected}", all.len());
    for (label, v) in [
        ("write sent", &from_send),
        ("write acknowledged", &from_ack),
    ] {
        println!(
            "latency {label} → viewer: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            kit::percentile(v, 0.50),
            kit::percentile(v, 0.99),
            v.last().copied().unwrap_or(f64::NAN)
        );
    }
    println!("upstream WATCH requests on the API server for this resource: {watches}");
    println!("portico RSS: {rss:.0} MB now, {hwm:.0} MB peak");
}

#[tokio::main]
async fn main() {
    let objects = kit::env_or("BENCH_OBJECTS", 10_000);
    let viewers = kit::env_or("BENCH_VIEWERS", 200);
    let rate = kit::env_or("BENCH_RATE", 100);
    let seconds = kit::env_or("BENCH_SECONDS", 10);

    let (plane, client) = kit::plane_with_crd_kind().await;

    let api = kit::crd_kinds(&client);
    let started = Instant::now();
    kit::create_all(&api, (0..objects).map(object)).await;
    println!(
        "created {objects} objects in {:.1}s",
        started.elapsed().as_secs_f64()
    );

    let (mut server, http, base) = start_portal(&plane, viewers).await;
    let transport = chosen_transport();
    let query = TableQuery {
        group: "iksoon.test.com".into(),
        version: "v1".into(),
        plural: "crdplural".into(),
        namespace: Some("default".into()),
        label_selector: None,
        field_selector: None,
        columns: None,
    };

    // 1. Complete table.
    complete_table(transport, &http, &base, &query, objects).await;

    // 3. Two added columns.
    added_columns(&plane, &client, transport, &http, &base, &query, objects).await;

    // 2. Fan-out under load.
    let sent: Sent = Arc::default();
    // (ms since sent, ms since acknowledged; negative when the event beat the response)
    let latencies: Arc<Mutex<Vec<Latency>>> = Arc::default();
    let tasks = connect_viewers(viewers, transport, &http, &base, &query, &sent, &latencies).await;
    let updates = rate * seconds;
    let acked = send_updates(&api, &sent, objects, rate, updates).await;
    print_fan_out(&client, server.id(), &latencies, &acked, updates * viewers).await;
    for t in tasks {
        t.abort();
    }
    let _ = server.kill();
    let _ = server.wait();
}

/// Part 3: a table with two added columns beside its floors, and the viewer's sort
/// and filter over it.
async fn added_columns(
    plane: &ControlPlane,
    client: &kube::Client,
    transport: Transport,
    http: &reqwest::Client,
    base: &str,
    plain: &TableQuery,
    objects: usize,
) {
    use portico_core::table::column_filters::ColumnFilter;
    use portico_core::table::state::{SortKey, TableState};
    const SPEC: &str = "CHOICE:.spec.choice,REPLICAS:{.spec.replicas}";
    let query = TableQuery {
        columns: Some(SPEC.into()),
        ..plain.clone()
    };
    let mut keep = Vec::new();
    let mut table = None;
    for round in 0..3 {
        let t = Instant::now();
        let mut reader = Viewer::open(transport, http, base, &query).await;
        let Some(Got::Table(snapshot, bytes)) = reader.next().await else {
            panic!("a snapshot first");
        };
        assert_eq!(snapshot.rows.len(), objects);
        let label = if round == 0 { "cold" } else { "warm" };
        println!(
            "complete table with 2 added columns, {label}: {:.0} ms ({:.1} MB of JSON)",
            t.elapsed().as_secs_f64() * 1000.0,
            bytes as f64 / 1e6
        );
        table = Some(snapshot);
        keep.push(reader);
    }
    drop(keep);

    // Floors: kubectl with the same spec, and the raw list Portico makes.
    let kubectl = kit::tool("kubectl");
    for round in 0..3 {
        let t = Instant::now();
        let out = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(plane.admin_kubeconfig())
            .args(["get", "crdplural.iksoon.test.com", "-n", "default"])
            .arg(format!("-o=custom-columns=NAME:.metadata.name,{SPEC}"))
            .output()
            .expect("kubectl runs");
        assert!(out.status.success());
        let lines = out.stdout.iter().filter(|b| **b == b'\n').count();
        println!(
            "floor, kubectl get -o custom-columns (round {round}): {:.0} ms ({} lines)",
            t.elapsed().as_secs_f64() * 1000.0,
            lines
        );
    }
    for round in 0..3 {
        let t = Instant::now();
        let req = http::Request::get(
            "/apis/iksoon.test.com/v1/namespaces/default/crdplural?includeObject=Object",
        )
        .header(
            "accept",
            portico_server::live::upstream::table_api::TABLE_ACCEPT,
        )
        .body(Vec::new())
        .expect("request");
        let text = client.request_text(req).await.expect("raw list");
        println!(
            "floor, raw Table list of whole objects (round {round}): {:.0} ms ({:.1} MB)",
            t.elapsed().as_secs_f64() * 1000.0,
            text.len() as f64 / 1e6
        );
    }

    // The viewer's work: rows in, sort by an added column, filter by the other.
    let snapshot = table.expect("a table");
    let t = Instant::now();
    let state = TableState::from_snapshot(snapshot);
    let loaded = t.elapsed();
    let by_replicas = SortKey::parse("REPLICAS:desc");
    let t = Instant::now();
    let sorted = state.view("", by_replicas.as_ref(), false, 0).len();
    let sort = t.elapsed();
    let mysql = [ColumnFilter {
        column: "CHOICE".into(),
        text: "mysql".into(),
    }];
    let t = Instant::now();
    let filtered = state
        .view_filtered("", &mysql, by_replicas.as_ref(), false, 0)
        .len();
    let filter = t.elapsed();
    println!(
        "viewer, {objects} rows with 2 added columns (native): rows in {:.1} ms, sorted by REPLICAS {:.1} ms ({sorted} rows), filtered CHOICE=mysql {:.1} ms ({filtered} rows)",
        loaded.as_secs_f64() * 1000.0,
        sort.as_secs_f64() * 1000.0,
        filter.as_secs_f64() * 1000.0
    );
}
