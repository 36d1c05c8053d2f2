//! A workload's merged log under load, on the local cluster's real node: a Deployment
//! of BENCH_PODS Pods (default 20), each writing BENCH_RATE lines a second (default
//! 1,000), followed for BENCH_SECONDS (default 20) by Portico's `workload_logs` view
//! and, in the same run, by the floor: `kubectl logs -f -l … --prefix --timestamps`
//! (stern's way, one request per container). For each: lines received a second,
//! lines the view skipped (Portico's bound: 128 KiB/s per view), the lag from kubelet's
//! stamp to arrival (p50, p99), CPU seconds, and for Portico the bytes held in the
//! person's budget. Run with `cargo bench -p server --bench workload_logs` (as root;
//! against KUBECONFIG's cluster when set, else a local one with the real node).
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::io::BufRead;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams};
use portico_control_plane::cluster::TestCluster;
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic, WorkloadLogQuery};
use portico_core::live::tagged_line;
use portico_server::web::state::AppState;
use serde_json::json;

/// What one follower saw in the window.
#[derive(Default)]
struct Seen {
    lines: u64,
    skipped: u64,
    lags_ms: Vec<f64>,
    cpu_s: f64,
    bytes_held: usize,
}

impl Seen {
    fn lag(&mut self, stamp: &str) {
        if let Ok(at) = stamp.parse::<Timestamp>() {
            let lag = Timestamp::now().duration_since(at);
            self.lags_ms.push(lag.as_secs_f64() * 1000.0);
        }
    }
}

/// The Deployment `bench` in `ns`: `pods` Pods, each writing `rate` lines a second;
/// returns once every Pod is ready.
async fn start_workload(client: &kube::Client, ns: &str, pods: u64, rate: u64) {
    // Batches of a tenth of a second: awk writes them, one `sleep` a batch.
    let per_batch = (rate / 10).max(1);
    let script = format!(
        "awk 'BEGIN {{ while (1) {{ for (i = 0; i < {per_batch}; i++) printf \"line %d of a workload under load\\n\", n++; fflush(); system(\"sleep 0.1\") }} }}'"
    );
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "bench"},
        "spec": {
            "replicas": pods,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "portico.local/mariadb:10.11",
                        "imagePullPolicy": "Never", "command": ["sh", "-c", script]}]}}}
    }))
    .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    kit::create_soon(&deployments, &deployment).await;
    let ready = async {
        loop {
            let d = deployments.get("bench").await.unwrap();
            let ready = d.status.and_then(|s| s.ready_replicas).unwrap_or(0);
            if ready as u64 >= pods {
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(300), ready)
        .await
        .expect("every Pod ready in 5 minutes");
}

/// Portico's follower: the view as a page opens it (tail 0) on the Portico at `origin`
/// (whose `state` says the bytes held), read for `window`.
async fn follow_with_portico(origin: &str, state: &AppState, ns: &str, window: Duration) -> Seen {
    let mut socket = kit::socket::connect(origin, kit::socket::LIVE, None, None).await;
    let subscribe = ClientMessage::Subscribe {
        id: 1,
        topic: Topic::WorkloadLogs {
            query: WorkloadLogQuery {
                namespace: ns.to_string(),
                selector: "app=bench".into(),
                tail_lines: Some(0),
            },
        },
        resume: None,
    };
    kit::socket::send_json(&mut socket, &subscribe).await;
    let mut portico = Seen::default();
    let cpu_before = kit::cpu_seconds(std::process::id());
    let end = Instant::now() + window;
    while let Ok(Some(frame)) = kit::socket::next_frame_by(&mut socket, end.into()).await {
        let kit::socket::Frame::Text(text) = frame else {
            continue;
        };
        if let Ok(ServerMessage::Log { lines, skipped, .. }) = serde_json::from_str(&text) {
            portico.skipped += skipped;
            for line in &lines {
                if let Some(parts) = tagged_line::parse(line).filter(|p| p.container.is_some()) {
                    portico.lines += 1;
                    portico.lag(parts.at);
                }
            }
        }
        portico.bytes_held = portico.bytes_held.max(state.live.hub.bytes_held(&None).0);
    }
    portico.cpu_s = kit::cpu_seconds(std::process::id()) - cpu_before;
    portico
}

/// The floor's follower: kubectl, one follow per container (at most `pods`), prefixed
/// and stamped, read for `window`.
async fn follow_with_kubectl(cluster: &TestCluster, ns: &str, pods: u64, window: Duration) -> Seen {
    let mut floor = Seen::default();
    let mut kubectl = std::process::Command::new("kubectl")
        .env("KUBECONFIG", cluster.admin_kubeconfig())
        .args([
            "logs",
            "-f",
            "-n",
            ns,
            "-l",
            "app=bench",
            "--prefix",
            "--timestamps",
        ])
        .args(["--tail=0", "--max-log-requests", &pods.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubectl runs");
    let pid = kubectl.id();
    let stdout = kubectl.stdout.take().unwrap();
    let reading = std::thread::spawn(move || {
        let mut seen = Seen::default();
        let end = Instant::now() + window;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // `[pod/NAME/CONTAINER] STAMP TEXT`
            if let Some(stamp) = line.split_once("] ").and_then(|(_, r)| r.split(' ').next()) {
                seen.lines += 1;
                seen.lag(stamp);
            }
            if Instant::now() >= end {
                break;
            }
        }
        seen
    });
    tokio::time::sleep(window).await;
    floor.cpu_s = kit::cpu_seconds(pid);
    let _ = kubectl.kill();
    let _ = kubectl.wait();
    let counted = reading.join().unwrap();
    floor.lines = counted.lines;
    floor.lags_ms = counted.lags_ms;
    floor
}

/// The table of what each follower saw in `window`.
fn print_table(portico: &mut Seen, floor: &mut Seen, window: Duration) {
    println!(
        "| follower | lines/s received | lines skipped | lag p50 | lag p99 | CPU s | bytes held |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, seen) in [
        ("Portico, workload_logs", portico),
        ("floor: kubectl logs -f -l --prefix", floor),
    ] {
        let (p50, p99) = kit::p50_p99(&mut seen.lags_ms);
        println!(
            "| {name} | {:.0} | {} | {p50:.0} ms | {p99:.0} ms | {:.2} | {} |",
            seen.lines as f64 / window.as_secs_f64(),
            seen.skipped,
            seen.cpu_s,
            if seen.bytes_held > 0 {
                format!("{} KiB", seen.bytes_held / 1024)
            } else {
                "—".into()
            },
        );
    }
}

#[tokio::main]
async fn main() {
    let (pods, rate, seconds) = (
        kit::env_or("BENCH_PODS", 20) as u64,
        kit::env_or("BENCH_RATE", 1000) as u64,
        kit::env_or("BENCH_SECONDS", 20) as u64,
    );
    let cluster = TestCluster::shared_real();
    let client = kit::admin_with_stack_crd_on(cluster).await;
    let ns = kit::fresh_namespace(&client, "bench-logs").await;
    start_workload(&client, &ns, pods, rate).await;
    let window = Duration::from_secs(seconds);
    println!(
        "workload logs: {pods} Pods × {rate} lines/s ({} lines/s written), {seconds} s each",
        pods * rate
    );

    let (origin, state) = kit::serve(&client, None).await;
    let mut portico = follow_with_portico(&origin, &state, &ns, window).await;
    let mut floor = follow_with_kubectl(cluster, &ns, pods, window).await;
    print_table(&mut portico, &mut floor, window);
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let _ = namespaces.delete(&ns, &DeleteParams::default()).await;
}
