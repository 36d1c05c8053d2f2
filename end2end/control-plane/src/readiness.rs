//! Waiting for the cluster's processes to be ready: each answers an HTTP check, or
//! fails early with the end of its log when it exits.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::ControlPlaneError;
use crate::certs::CertPair;

const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A blocking HTTP client trusting `ca_pem` (else the system roots) and presenting
/// `identity`, if given.
pub(crate) fn http_client(
    ca_pem: Option<&str>,
    identity: Option<&CertPair>,
) -> Result<reqwest::blocking::Client, ControlPlaneError> {
    let mut builder = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy();
    if let Some(ca) = ca_pem {
        let cert = reqwest::Certificate::from_pem(ca.as_bytes())
            .map_err(|e| ControlPlaneError::Client(e.to_string()))?;
        builder = builder
            .tls_built_in_root_certs(false)
            .add_root_certificate(cert);
    }
    if let Some(pair) = identity {
        let pem = format!("{}{}", pair.cert_pem, pair.key_pem);
        let id = reqwest::Identity::from_pem(pem.as_bytes())
            .map_err(|e| ControlPlaneError::Client(e.to_string()))?;
        builder = builder.identity(id);
    }
    builder
        .build()
        .map_err(|e| ControlPlaneError::Client(e.to_string()))
}

/// The last lines of a log file; the file itself goes away with the control plane.
pub(crate) fn log_tail(log: &Path) -> String {
    last_lines(&std::fs::read_to_string(log).unwrap_or_default())
}

/// The last 15 lines of `text`: enough to say why a program failed.
pub(crate) fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(15);
    lines.get(from..).unwrap_or_default().join("\n")
}

/// A process being waited for: its name, the process, its log.
pub(crate) struct Waited<'a> {
    pub component: &'static str,
    pub child: &'a mut Child,
    pub log: &'a Path,
}

/// Calls `ready` with a client built from `ca`/`identity` until it says yes, failing
/// early if the process exits. Runs on its own thread: a blocking HTTP client must not
/// be created or dropped inside an async runtime, and callers (tests) often are inside
/// one.
pub(crate) fn wait_until(
    waited: Waited<'_>,
    ca: Option<&str>,
    identity: Option<&CertPair>,
    ready: impl FnMut(&reqwest::blocking::Client) -> bool + Send,
) -> Result<(), ControlPlaneError> {
    with_client(ca, identity, |client| poll(waited, client, ready))
}

/// Runs `work` with a blocking client (see [`wait_until`]) on its own thread.
pub(crate) fn with_client<T: Send>(
    ca: Option<&str>,
    identity: Option<&CertPair>,
    work: impl FnOnce(&reqwest::blocking::Client) -> Result<T, ControlPlaneError> + Send,
) -> Result<T, ControlPlaneError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| work(&http_client(ca, identity)?))
            .join()
            .unwrap_or_else(|_| Err(ControlPlaneError::Client("a setup thread panicked".into())))
    })
}

/// `ready` for a health endpoint: it answers 200.
pub(crate) fn answers_ok(url: String) -> impl FnMut(&reqwest::blocking::Client) -> bool + Send {
    move |client| {
        client
            .get(&url)
            .send()
            .is_ok_and(|resp| resp.status().is_success())
    }
}

fn poll(
    waited: Waited<'_>,
    client: &reqwest::blocking::Client,
    mut ready: impl FnMut(&reqwest::blocking::Client) -> bool,
) -> Result<(), ControlPlaneError> {
    let Waited {
        component,
        child,
        log,
    } = waited;
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(ControlPlaneError::Exited {
                component,
                status,
                log_tail: log_tail(log),
            });
        }
        if ready(client) {
            return Ok(());
        }
        if start.elapsed() > START_TIMEOUT {
            return Err(ControlPlaneError::NotReady {
                component,
                seconds: START_TIMEOUT.as_secs(),
                log_tail: log_tail(log),
            });
        }
        // Polling another process's HTTP endpoint: there is no event to wait on.
        std::thread::sleep(Duration::from_millis(100));
    }
}
