//! A real, local Kubernetes control plane: etcd plus kube-apiserver on free loopback
//! ports, with generated certificates, RBAC, service-account signing keys, an admin
//! kubeconfig and client certificates for extra users.
//!
//! Binaries: `$KUBEBUILDER_ASSETS/{etcd,kube-apiserver}` when that is set (the envtest
//! convention); otherwise etcd from the `etcd-bin-vendored` crate and kube-apiserver
//! from the cache filled by `end2end/kube-apiserver/build.sh`.

pub mod apply;
pub mod certs;
pub mod cluster;
pub mod corpus;
pub mod kubeconfig;
pub mod process;

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use certs::{CertError, CertificateAuthority};

/// The Kubernetes version the cached kube-apiserver is built at (from the wrapper's go.mod).
pub fn pinned_kubernetes_version() -> &'static str {
    include_str!("../../kube-apiserver/go.mod")
        .lines()
        .find_map(|line| line.trim().strip_prefix("k8s.io/kubernetes "))
        .map(str::trim)
        .unwrap_or("unknown")
}

#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error(
        "kube-apiserver binary not found at {0}: run end2end/kube-apiserver/build.sh, or set KUBEBUILDER_ASSETS"
    )]
    MissingApiServer(PathBuf),
    #[error("etcd binary not found at {0}")]
    MissingEtcd(PathBuf),
    #[error("no HOME directory to cache binaries in; set PORTICO_CACHE_DIR")]
    NoCacheDir,
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Certs(#[from] CertError),
    #[error("{component} did not become ready within {seconds}s; the end of its log:\n{log_tail}")]
    NotReady {
        component: &'static str,
        seconds: u64,
        log_tail: String,
    },
    #[error("{component} exited during start-up ({status}); the end of its log:\n{log_tail}")]
    Exited {
        component: &'static str,
        status: std::process::ExitStatus,
        log_tail: String,
    },
    #[error("building a client: {0}")]
    Client(String),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ControlPlaneError {
    let what = what.into();
    move |source| ControlPlaneError::Io { what, source }
}

/// Where the two binaries come from.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
}

impl Binaries {
    pub fn locate() -> Result<Self, ControlPlaneError> {
        let found = match std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty()) {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                Self {
                    etcd: dir.join("etcd"),
                    kube_apiserver: dir.join("kube-apiserver"),
                }
            }
            None => Self {
                etcd: etcd_bin_vendored::etcd_bin_path()
                    .map_err(|e| ControlPlaneError::Client(format!("no vendored etcd: {e:?}")))?
                    .to_path_buf(),
                kube_apiserver: cached_apiserver_path()?,
            },
        };
        if !found.etcd.is_file() {
            return Err(ControlPlaneError::MissingEtcd(found.etcd));
        }
        if !found.kube_apiserver.is_file() {
            return Err(ControlPlaneError::MissingApiServer(found.kube_apiserver));
        }
        Ok(found)
    }
}

/// The path `build.sh` caches kube-apiserver at.
pub fn cached_apiserver_path() -> Result<PathBuf, ControlPlaneError> {
    if let Some(explicit) = std::env::var_os("PORTICO_KUBE_APISERVER") {
        return Ok(PathBuf::from(explicit));
    }
    let cache = match std::env::var_os("PORTICO_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").ok_or(ControlPlaneError::NoCacheDir)?)
            .join(".cache/portico"),
    };
    Ok(cache.join(format!("kube-apiserver-{}", pinned_kubernetes_version())))
}

/// `n` distinct free loopback ports. The listeners are held until all are chosen, so
/// the kernel cannot hand the same port out twice.
fn free_ports<const N: usize>() -> Result<[u16; N], ControlPlaneError> {
    let listeners = (0..N)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(io_err("finding a free port"))?;
    let mut ports = [0u16; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener
            .local_addr()
            .map_err(io_err("finding a free port"))?
            .port();
    }
    Ok(ports)
}

const DIR_PREFIX: &str = "portico-cp-";
/// The pid of the process that started a control plane, inside its directory.
const OWNER_FILE: &str = "owner.pid";

/// Control planes whose owner died without dropping them (a test binary's shared
/// cluster lives in a static, a killed launcher) leave their etcd data behind; runs
/// on one machine would fill its disk. Remove the directories of dead owners.
fn remove_abandoned_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(DIR_PREFIX);
        let owner = std::fs::read_to_string(path.join(OWNER_FILE)).ok();
        let dead = owner
            .and_then(|pid| pid.trim().parse::<u32>().ok())
            .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
        if ours && dead {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// A running control plane. Dropping it stops both processes and removes its files.
pub struct ControlPlane {
    dir: tempfile::TempDir,
    etcd: Child,
    apiserver: Child,
    apiserver_args: Vec<String>,
    binaries: Binaries,
    ca: CertificateAuthority,
    server_url: String,
    admin_kubeconfig: PathBuf,
}

const START_TIMEOUT: Duration = Duration::from_secs(120);

impl ControlPlane {
    /// Starts etcd and kube-apiserver and waits until the API server is ready.
    pub fn start() -> Result<Self, ControlPlaneError> {
        let binaries = Binaries::locate()?;
        remove_abandoned_dirs();
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(io_err("creating the control plane's directory"))?;
        let root = dir.path();
        std::fs::write(root.join(OWNER_FILE), std::process::id().to_string())
            .map_err(io_err("recording the control plane's owner"))?;
        let write = |name: &str, contents: &str| -> Result<PathBuf, ControlPlaneError> {
            let path = root.join(name);
            std::fs::write(&path, contents).map_err(io_err(format!("writing {name}")))?;
            Ok(path)
        };

        let ca = CertificateAuthority::new()?;
        let serving = ca.serving_cert()?;
        let ca_file = write("ca.crt", &ca.cert_pem())?;
        let tls_cert = write("apiserver.crt", &serving.cert_pem)?;
        let tls_key = write("apiserver.key", &serving.key_pem)?;
        let (sa_private, sa_public) = certs::service_account_keys()?;
        let sa_key = write("sa.key", &sa_private)?;
        let sa_pub = write("sa.pub", &sa_public)?;

        let [etcd_port, etcd_peer_port, port] = free_ports()?;
        let etcd_url = format!("http://127.0.0.1:{etcd_port}");
        let mut etcd_cmd = Command::new(&binaries.etcd);
        etcd_cmd
            .arg(format!("--data-dir={}", root.join("etcd").display()))
            .arg(format!("--listen-client-urls={etcd_url}"))
            .arg(format!("--advertise-client-urls={etcd_url}"))
            .arg(format!(
                "--listen-peer-urls=http://127.0.0.1:{etcd_peer_port}"
            ))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer_port}"
            ))
            .arg(format!(
                "--initial-cluster=default=http://127.0.0.1:{etcd_peer_port}"
            ))
            .arg("--unsafe-no-fsync=true");
        let etcd_log = root.join("etcd.log");
        let mut etcd = spawn_logged(etcd_cmd, &etcd_log)?;
        wait_until(
            "etcd",
            &mut etcd,
            &etcd_log,
            None,
            &format!("{etcd_url}/health"),
        )?;

        let server_url = format!("https://127.0.0.1:{port}");
        let apiserver_args: Vec<String> = vec![
            format!("--etcd-servers={etcd_url}"),
            format!("--secure-port={port}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--cert-dir={}", root.join("apiserver-certs").display()),
            format!("--tls-cert-file={}", tls_cert.display()),
            format!("--tls-private-key-file={}", tls_key.display()),
            format!("--client-ca-file={}", ca_file.display()),
            "--service-cluster-ip-range=10.0.0.0/16".into(),
            "--allow-privileged=true".into(),
            "--disable-admission-plugins=ServiceAccount".into(),
            "--authorization-mode=RBAC".into(),
            format!("--service-account-issuer={server_url}"),
            format!("--service-account-key-file={}", sa_pub.display()),
            format!("--service-account-signing-key-file={}", sa_key.display()),
            // Fewer moving parts at start-up; flow control is not under test here.
            "--enable-priority-and-fairness=false".into(),
            "--profiling=false".into(),
        ];

        let admin = ca.client_cert("portico-admin", Some("system:masters"))?;
        let admin_kubeconfig = root.join("admin.kubeconfig");
        kubeconfig::write(
            &admin_kubeconfig,
            &server_url,
            &ca.cert_pem(),
            "portico-admin",
            &admin,
        )
        .map_err(io_err("writing the admin kubeconfig"))?;

        let apiserver = Self::spawn_apiserver(&binaries, root, &apiserver_args)?;
        let mut plane = Self {
            dir,
            etcd,
            apiserver,
            apiserver_args,
            binaries,
            ca,
            server_url,
            admin_kubeconfig,
        };
        plane.wait_apiserver_ready()?;
        Ok(plane)
    }

    fn spawn_apiserver(
        binaries: &Binaries,
        root: &Path,
        args: &[String],
    ) -> Result<Child, ControlPlaneError> {
        let mut cmd = Command::new(&binaries.kube_apiserver);
        cmd.args(args);
        spawn_logged(cmd, &root.join("kube-apiserver.log"))
    }

    fn wait_apiserver_ready(&mut self) -> Result<(), ControlPlaneError> {
        let admin = self
            .ca
            .client_cert("portico-readiness", Some("system:masters"))?;
        let log = self.dir.path().join("kube-apiserver.log");
        wait_until(
            "kube-apiserver",
            &mut self.apiserver,
            &log,
            Some((&self.ca.cert_pem(), &admin)),
            &format!("{}/readyz", self.server_url),
        )
    }

    /// Stops kube-apiserver and starts it again on the same port and etcd, as a
    /// cluster upgrade or crash would; waits until it is ready again.
    pub fn restart_apiserver(&mut self) -> Result<(), ControlPlaneError> {
        process::stop(&mut self.apiserver);
        self.apiserver =
            Self::spawn_apiserver(&self.binaries, self.dir.path(), &self.apiserver_args)?;
        self.wait_apiserver_ready()
    }

    /// `https://127.0.0.1:PORT`
    pub fn server_url(&self) -> &str {
        &self.server_url
    }

    /// A kubeconfig for `system:masters`.
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.admin_kubeconfig
    }

    /// The directory holding the control plane's files and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a kubeconfig for an extra user (optionally in one group) and returns its path.
    pub fn user_kubeconfig(
        &self,
        user: &str,
        group: Option<&str>,
    ) -> Result<PathBuf, ControlPlaneError> {
        let pair = self.ca.client_cert(user, group)?;
        let safe: String = user
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = self.dir.path().join(format!("user-{safe}.kubeconfig"));
        kubeconfig::write(&path, &self.server_url, &self.ca.cert_pem(), user, &pair)
            .map_err(io_err("writing a user kubeconfig"))?;
        Ok(path)
    }

    /// An admin kube client.
    pub async fn admin_client(&self) -> Result<kube::Client, ControlPlaneError> {
        kubeconfig::client_from(&self.admin_kubeconfig).await
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        process::stop(&mut self.apiserver);
        process::stop(&mut self.etcd);
    }
}

fn spawn_logged(mut cmd: Command, log: &Path) -> Result<Child, ControlPlaneError> {
    let out = std::fs::File::create(log).map_err(io_err(format!("creating {}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(io_err(format!("opening {}", log.display())))?;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    let program = cmd.get_program().to_string_lossy().into_owned();
    process::spawn_tied(cmd).map_err(io_err(format!("starting {program}")))
}

fn http_client(
    ca_pem: Option<&str>,
    identity: Option<&certs::CertPair>,
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
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let from = lines.len().saturating_sub(15);
    lines.get(from..).unwrap_or_default().join("\n")
}

/// Polls `url` until it answers 200, failing early if the process exits. Runs on its
/// own thread: a blocking HTTP client must not be created or dropped inside an async
/// runtime, and callers (tests) often are inside one.
fn wait_until(
    component: &'static str,
    child: &mut Child,
    log: &Path,
    tls: Option<(&str, &certs::CertPair)>,
    url: &str,
) -> Result<(), ControlPlaneError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let client = match tls {
                    Some((ca, identity)) => http_client(Some(ca), Some(identity))?,
                    None => http_client(None, None)?,
                };
                poll_ready(component, child, log, &client, url)
            })
            .join()
            .unwrap_or_else(|_| {
                Err(ControlPlaneError::Client(
                    "readiness poller panicked".into(),
                ))
            })
    })
}

fn poll_ready(
    component: &'static str,
    child: &mut Child,
    log: &Path,
    client: &reqwest::blocking::Client,
    url: &str,
) -> Result<(), ControlPlaneError> {
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(ControlPlaneError::Exited {
                component,
                status,
                log_tail: log_tail(log),
            });
        }
        if let Ok(resp) = client.get(url).send()
            && resp.status().is_success()
        {
            return Ok(());
        }
        if start.elapsed() > START_TIMEOUT {
            return Err(ControlPlaneError::NotReady {
                component,
                seconds: START_TIMEOUT.as_secs(),
                log_tail: log_tail(log),
            });
        }
        // Polling an HTTP endpoint of another process: there is no event to wait on.
        std::thread::sleep(Duration::from_millis(100));
    }
}
