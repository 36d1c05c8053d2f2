//! A terminal into a container on the local cluster's real node, beside the floor in
//! the same run (`kubectl exec -i` on the same Pod):
//! - keystroke round trip: a key sent, its echo back (Portico: the terminal's own
//!   echo; kubectl: `cat` giving a line back), BENCH_ROUNDS times (default 200), p50
//!   and p99;
//! - output: BENCH_MB megabytes (default 10) printed in the container, read whole:
//!   MB/s, and for Portico the most memory its process grew while they passed.
//!
//! Run with `cargo bench -p server --bench terminal` (as root; against KUBECONFIG's
//! cluster when set, else a local one with the real node).
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kit::socket::{Frame, Socket};
use kube::api::Api;
use portico_control_plane::cluster::TestCluster;
use portico_core::live::terminal::{TerminalCommand, TerminalEvent, TerminalSize, TerminalStart};
use serde_json::json;

async fn terminal(origin: &str, ns: &str, command: TerminalCommand) -> Socket {
    let mut socket = kit::socket::connect(origin, kit::socket::EXEC, None, None).await;
    let start = TerminalStart {
        namespace: ns.into(),
        pod: "shell".into(),
        container: None,
        command,
        size: TerminalSize { cols: 80, rows: 24 },
    };
    kit::socket::send_json(&mut socket, &start).await;
    match kit::socket::next_frame(&mut socket).await {
        Some(Frame::Text(text)) => {
            let event: TerminalEvent = serde_json::from_str(&text).unwrap();
            assert!(matches!(event, TerminalEvent::Started { .. }), "{event:?}");
        }
        other => panic!("no start: {other:?}"),
    }
    socket
}

/// Output bytes until `wanted` is among them (pings and events skipped).
async fn until_byte(socket: &mut Socket, wanted: u8) {
    loop {
        match kit::socket::next_frame(socket).await {
            Some(Frame::Binary(bytes)) if bytes.contains(&wanted) => return,
            Some(_) => {}
            None => panic!("the terminal ended"),
        }
    }
}

/// A fresh namespace holding the Pod `shell` (`sleep` in the real node's image), once
/// it runs.
async fn running_shell(client: &kube::Client) -> String {
    let ns = kit::fresh_namespace(client, "bench-term").await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "shell"},
        "spec": {
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "portico.local/mariadb:10.11",
                "imagePullPolicy": "Never", "command": ["sleep", "3600"]}]}
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    kit::create_soon(&pods, &pod).await;
    let running = async {
        loop {
            let pod = pods.get("shell").await.unwrap();
            let phase = pod.status.and_then(|s| s.phase).unwrap_or_default();
            if phase == "Running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(120), running)
        .await
        .expect("the Pod runs within 2 minutes");
    ns
}

/// Portico's keystroke round trips, in milliseconds: `cat` in a terminal, where a
/// key's echo is the terminal's.
async fn portico_keystrokes(origin: &str, ns: &str, rounds: usize) -> Vec<f64> {
    let mut socket = terminal(origin, ns, TerminalCommand::Program(vec!["cat".into()])).await;
    let mut rtt = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let sent = Instant::now();
        kit::socket::send_binary(&mut socket, b"a").await;
        until_byte(&mut socket, b'a').await;
        rtt.push(sent.elapsed().as_secs_f64() * 1000.0);
    }
    rtt
}

/// The floor's keystroke round trips, in milliseconds: `kubectl exec -i … cat`, a line
/// in, the line back.
async fn kubectl_keystrokes(cluster: &TestCluster, ns: &str, rounds: usize) -> Vec<f64> {
    let mut kubectl = std::process::Command::new("kubectl")
        .env("KUBECONFIG", cluster.admin_kubeconfig())
        .args(["exec", "-i", "-n", ns, "shell", "--", "cat"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let mut stdin = kubectl.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(kubectl.stdout.take().unwrap());
    let rtt = tokio::task::spawn_blocking(move || {
        let mut rtt = Vec::with_capacity(rounds);
        let mut line = String::new();
        for _ in 0..rounds {
            let sent = Instant::now();
            stdin.write_all(b"a\n").unwrap();
            stdin.flush().unwrap();
            line.clear();
            stdout.read_line(&mut line).unwrap();
            rtt.push(sent.elapsed().as_secs_f64() * 1000.0);
        }
        rtt
    })
    .await
    .unwrap();
    let _ = kubectl.kill();
    let _ = kubectl.wait();
    rtt
}

/// What reading a whole output through Portico's terminal gave.
struct PorticoOutput {
    /// Left open until the figures are printed: the floor's output is read beside it.
    socket: Socket,
    received: usize,
    seconds: f64,
    /// The most this process's resident memory grew while the output passed, in MB.
    grown_mb: f64,
}

/// Portico's output: `script` run in a terminal, read until its last `!`.
async fn portico_output(origin: &str, ns: &str, script: &str) -> PorticoOutput {
    let before = kit::rss_mb(std::process::id(), "VmRSS:");
    let mut peak = before;
    let started = Instant::now();
    let mut socket = terminal(
        origin,
        ns,
        TerminalCommand::Program(vec!["sh".into(), "-c".into(), script.to_string()]),
    )
    .await;
    let mut received = 0usize;
    loop {
        match kit::socket::next_frame(&mut socket).await {
            Some(Frame::Binary(chunk)) => {
                received += chunk.len();
                peak = peak.max(kit::rss_mb(std::process::id(), "VmRSS:"));
                if chunk.contains(&b'!') {
                    break;
                }
            }
            Some(Frame::Text(_)) => {}
            None => panic!("the output ended early"),
        }
    }
    PorticoOutput {
        seconds: started.elapsed().as_secs_f64(),
        socket,
        received,
        grown_mb: peak - before,
    }
}

/// The floor's output: `script` run by `kubectl exec`, read whole (at least `bytes`);
/// the bytes read and the seconds they took.
async fn kubectl_output(
    cluster: &TestCluster,
    ns: &str,
    script: &str,
    bytes: usize,
) -> (usize, f64) {
    let started = Instant::now();
    let floor = tokio::process::Command::new("kubectl")
        .env("KUBECONFIG", cluster.admin_kubeconfig())
        .args(["exec", "-n", ns, "shell", "--", "sh", "-c", script])
        .output()
        .await
        .expect("kubectl runs");
    let floor_s = started.elapsed().as_secs_f64();
    assert!(floor.stdout.len() >= bytes, "kubectl read the whole output");
    (floor.stdout.len(), floor_s)
}

#[tokio::main]
async fn main() {
    let rounds = kit::env_or("BENCH_ROUNDS", 200);
    let megabytes = kit::env_or("BENCH_MB", 10);
    let cluster = TestCluster::shared_real();
    let client = kit::admin_with_stack_crd_on(cluster).await;
    let ns = running_shell(&client).await;
    let (origin, _state) = kit::serve(&client, None).await;
    println!("terminal: {rounds} keystrokes, then {megabytes} MB of output, on the real node");

    let mut portico_rtt = portico_keystrokes(&origin, &ns, rounds).await;
    let mut floor_rtt = kubectl_keystrokes(cluster, &ns, rounds).await;

    // Output: BENCH_MB megabytes of `x`, then a last `!`.
    let bytes = megabytes * 1_000_000;
    let script = format!("head -c {bytes} /dev/zero | tr '\\0' x; echo '!'");
    let portico = portico_output(&origin, &ns, &script).await;
    let (floor_bytes, floor_s) = kubectl_output(cluster, &ns, &script, bytes).await;

    let (p50, p99) = kit::p50_p99(&mut portico_rtt);
    let (floor_p50, floor_p99) = kit::p50_p99(&mut floor_rtt);
    let portico_s = portico.seconds;
    println!("| path | keystroke p50 | keystroke p99 | {megabytes} MB out | MB/s | memory grown |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| Portico `/api/exec` (tty) | {p50:.1} ms | {p99:.1} ms | {portico_s:.1} s | {:.2} | {:.1} MB |",
        portico.received as f64 / 1e6 / portico_s,
        portico.grown_mb
    );
    println!(
        "| floor: `kubectl exec -i` | {floor_p50:.1} ms | {floor_p99:.1} ms | {floor_s:.1} s | {:.2} | — |",
        floor_bytes as f64 / 1e6 / floor_s
    );
    drop(portico.socket);
}
