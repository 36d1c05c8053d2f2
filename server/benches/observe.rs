//! What observing the portal costs: the same live-table load on the real `portico`
//! binary without and with its observability switched on (`/metrics` scraped every
//! second, far more often than Prometheus does; every span sent as a trace to a real
//! collector, Jaeger), in the same run, alternating, against a real kube-apiserver.
//! Prints the portal's CPU time and resident memory for each.
//! `cargo bench -p server --bench observe` (env BENCH_OBJECTS, BENCH_VIEWERS,
//! BENCH_RATE, BENCH_SECONDS, BENCH_ROUNDS change the load).
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use portico_control_plane::ControlPlane;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Plain,
    Observed,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Self::Plain => "metrics not scraped, no traces",
            Self::Observed => "metrics scraped each second, every span traced",
        }
    }
}

struct Load {
    objects: usize,
    viewers: usize,
    rate: usize,
    seconds: usize,
}

/// One round's figures: CPU seconds the portal spent under the load, its resident
/// memory after it, and the events its viewers received.
struct Figures {
    cpu_seconds: f64,
    rss_mb: f64,
    events: usize,
}

fn object(i: usize) -> DynamicObject {
    kit::crd_kind(
        serde_json::json!({"name": format!("obj-{i:05}")}),
        "mysql",
        1,
    )
}

/// User and system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let process = procfs::process::Process::new(pid as i32).expect("the process");
    let stat = process.stat().expect("its stat");
    (stat.utime + stat.stime) as f64 / procfs::ticks_per_second() as f64
}

/// A portal under measure: its process, a client for it, its origin and its metrics
/// port.
struct Portal {
    server: std::process::Child,
    http: reqwest::Client,
    base: String,
    metrics: u16,
}

/// The `portico` binary on a free port, against `plane`, with its metrics on a port of
/// their own and, when `mode` says so, every span sent to `jaeger`; once it answers.
async fn start_portal(
    plane: &ControlPlane,
    load: &Load,
    mode: Mode,
    jaeger: &kit::jaeger::Jaeger,
) -> Portal {
    let port = kit::process::free_port();
    let metrics = kit::process::free_port();
    let mut command = Command::new(env!("CARGO_BIN_EXE_portico"));
    command
        .env("KUBECONFIG", plane.admin_kubeconfig())
        .env("PORTICO_LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "PORTICO_MAX_LIVE_VIEWS_PER_PERSON",
            (load.viewers + 8).to_string(),
        )
        .env("PORTICO_METRICS_LISTEN", format!("127.0.0.1:{metrics}"))
        // The deployment's filter and format in both modes: only the exporter differs.
        .env("PORTICO_LOG_FORMAT", "json")
        .stdout(Stdio::null());
    if mode == Mode::Observed {
        command.env("OTEL_EXPORTER_OTLP_ENDPOINT", &jaeger.otlp);
    }
    let server = command
        .stderr(Stdio::null())
        .spawn()
        .expect("portico starts");
    let http = reqwest::Client::builder().no_proxy().build().expect("http");
    let base = format!("http://127.0.0.1:{port}");
    kit::process::until_ready(&http, &base).await;
    Portal {
        server,
        http,
        base,
        metrics,
    }
}

/// `count` SSE viewers of the live table at `base`, counting the events they receive
/// in `events`; returns once each has had its first.
async fn open_viewers(
    http: &reqwest::Client,
    base: &str,
    count: usize,
    events: &Arc<AtomicUsize>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(count);
    let url = format!(
        "{base}/api/live/table?group=iksoon.test.com&version=v1&plural=crdplural&namespace=default"
    );
    let viewers: Vec<_> = (0..count)
        .map(|_| {
            let (http, url, events, ready) =
                (http.clone(), url.clone(), events.clone(), ready_tx.clone());
            tokio::spawn(async move {
                let response = http.get(&url).send().await.expect("a live table");
                assert!(response.status().is_success(), "{}", response.status());
                let mut body = response.bytes_stream();
                let mut announced = false;
                while let Some(Ok(chunk)) = body.next().await {
                    let seen = chunk.windows(6).filter(|w| w == b"event:").count();
                    events.fetch_add(seen, Ordering::Relaxed);
                    if !announced && seen > 0 {
                        announced = true;
                        let _ = ready.send(()).await;
                    }
                }
            })
        })
        .collect();
    for _ in 0..count {
        ready_rx.recv().await.expect("a viewer's first event");
    }
    viewers
}

/// The load's writes, `load.rate` a second for `load.seconds` (the objects from
/// `first_write` on, in turn), each answered; returns when the writing began.
async fn write_load(api: &Api<DynamicObject>, load: &Load, first_write: usize) -> Instant {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / load.rate as f64));
    let writes = load.rate * load.seconds;
    let load_started = Instant::now();
    let mut sent = Vec::with_capacity(writes);
    for i in first_write..first_write + writes {
        tick.tick().await;
        let api = api.clone();
        let name = format!("obj-{:05}", i % load.objects);
        let patch = serde_json::json!({"spec": {"replicas": 2 + i % 9}});
        sent.push(tokio::spawn(async move {
            api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map(|_| ())
        }));
    }
    for write in sent {
        write.await.expect("join").expect("a write");
    }
    load_started
}

/// Waits until the last events have reached the viewers: until a second passes
/// without one (changes are coalesced, so fewer events than writes arrive).
async fn until_quiet(events: &AtomicUsize) {
    let mut seen = events.load(Ordering::Relaxed);
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = events.load(Ordering::Relaxed);
        if now == seen {
            break;
        }
        seen = now;
    }
}

/// One round in `mode`: a portal of its own, its viewers, its scraper in the observed
/// mode, and the load's writes (from `first_write` on); what the portal spent on them.
async fn round(
    plane: &ControlPlane,
    api: &Api<DynamicObject>,
    load: &Load,
    mode: Mode,
    jaeger: &kit::jaeger::Jaeger,
    first_write: usize,
) -> Figures {
    let Portal {
        mut server,
        http,
        base,
        metrics,
    } = start_portal(plane, load, mode, jaeger).await;
    let pid = server.id();
    let events = Arc::new(AtomicUsize::new(0));
    let viewers = open_viewers(&http, &base, load.viewers, &events).await;
    let scraper = (mode == Mode::Observed).then(|| {
        let (http, url) = (http.clone(), format!("http://127.0.0.1:{metrics}/metrics"));
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                let text = http.get(&url).send().await.expect("a scrape");
                assert!(text.status().is_success());
                let _ = text.bytes().await;
            }
        })
    });

    let before = cpu_seconds(pid);
    let started_events = events.load(Ordering::Relaxed);
    let load_started = write_load(api, load, first_write).await;
    until_quiet(&events).await;
    let cpu = cpu_seconds(pid) - before;
    let rss = kit::rss_mb(pid, "VmRSS:");
    println!(
        "  under load {:.1}s: {} events",
        load_started.elapsed().as_secs_f64(),
        events.load(Ordering::Relaxed) - started_events
    );
    if let Some(scraper) = scraper {
        scraper.abort();
    }
    for viewer in viewers {
        viewer.abort();
    }
    let _ = server.kill();
    let _ = server.wait();
    Figures {
        cpu_seconds: cpu,
        rss_mb: rss,
        events: events.load(Ordering::Relaxed) - started_events,
    }
}

#[tokio::main]
async fn main() {
    let load = Load {
        objects: kit::env_or("BENCH_OBJECTS", 2_000),
        viewers: kit::env_or("BENCH_VIEWERS", 50),
        rate: kit::env_or("BENCH_RATE", 50),
        seconds: kit::env_or("BENCH_SECONDS", 10),
    };
    let rounds = kit::env_or("BENCH_ROUNDS", 2);
    let (plane, client) = kit::plane_with_crd_kind().await;
    let api = kit::crd_kinds(&client);
    kit::create_all(&api, (0..load.objects).map(object)).await;
    let jaeger = kit::jaeger::Jaeger::start().await;
    println!(
        "{} objects, {} viewers (SSE), {} writes/s for {} s, {rounds} rounds of each mode",
        load.objects, load.viewers, load.rate, load.seconds
    );
    let mut by_mode: Vec<(Mode, Vec<Figures>)> =
        vec![(Mode::Plain, Vec::new()), (Mode::Observed, Vec::new())];
    let mut first_write = 0;
    for r in 0..rounds {
        for (mode, figures) in &mut by_mode {
            println!("round {} — {}", r + 1, mode.label());
            let got = round(&plane, &api, &load, *mode, &jaeger, first_write).await;
            first_write += load.rate * load.seconds;
            println!(
                "  portal CPU {:.2} s, RSS {:.1} MB, {} events",
                got.cpu_seconds, got.rss_mb, got.events
            );
            figures.push(got);
        }
    }
    for (mode, figures) in &by_mode {
        let n = figures.len() as f64;
        let cpu = figures.iter().map(|f| f.cpu_seconds).sum::<f64>() / n;
        let rss = figures.iter().map(|f| f.rss_mb).sum::<f64>() / n;
        println!(
            "{}: mean portal CPU {cpu:.2} s ({:.1}% of one core), RSS {rss:.1} MB",
            mode.label(),
            cpu / load.seconds as f64 * 100.0
        );
    }
}
