//! Programs run beside the cluster: those the benchmarks start (Portico, kopf), their
//! logs read as they write them and a wait until one answers; and the local cluster's
//! pinned tools (kubectl, helm) the tests and benchmarks call.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Starts `command` with its stderr piped, handing each line to `on_line` on a thread
/// of its own (so a chatty program never blocks on a full pipe).
pub fn spawn_reading_stderr(
    command: &mut Command,
    on_line: impl Fn(String) + Send + 'static,
) -> Child {
    let mut child = command
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{:?} starts: {e}", command.get_program()));
    let stderr = child.stderr.take().expect("stderr is piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            on_line(line);
        }
    });
    child
}

/// Portico's log filter in a benchmark: warnings, unless `BENCH_PORTICO_LOG` says.
pub fn portico_log() -> String {
    std::env::var("BENCH_PORTICO_LOG").unwrap_or_else(|_| "warn".into())
}

/// A free loopback port, closed again: the program given it binds it a moment later.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until `origin` answers `/readyz` with a success.
pub async fn until_ready(http: &reqwest::Client, origin: &str) {
    while http
        .get(format!("{origin}/readyz"))
        .send()
        .await
        .map(|r| r.status().is_success())
        .ok()
        != Some(true)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `portico` binary (at `portico`: a test's `CARGO_BIN_EXE_portico`) in token mode
/// on a free loopback port, as a process of its own (so its resident memory is its
/// own), against the cluster of `kubeconfig`, with `args` added; ready when this
/// returns. Killed when the child is dropped.
pub async fn token_mode_portico(
    portico: &std::path::Path,
    kubeconfig: &std::path::Path,
    args: &[&str],
) -> (String, tokio::process::Child, u32) {
    let listen = format!("127.0.0.1:{}", free_port());
    let child = tokio::process::Command::new(portico)
        .args([
            "--listen",
            &listen,
            "--identity",
            "token",
            "--reconciler",
            "off",
        ])
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("PORTICO_LOG", "warn")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("PORTICO_INSECURE_LOCAL_IDENTITY_FOR_EVERYONE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("portico starts");
    let pid = child.id().expect("a pid");
    let origin = format!("http://{listen}");
    until_ready(&reqwest::Client::new(), &origin).await;
    (origin, child, pid)
}

/// A pinned tool of the local cluster's (kubectl, whose kustomize is what `kubectl
/// apply -k` runs; helm), built once and cached by end2end/kubernetes/build.sh.
pub fn tool(name: &str) -> std::path::PathBuf {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../end2end/kubernetes/build.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(name)
        .output()
        .unwrap_or_else(|e| panic!("build.sh {name}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
