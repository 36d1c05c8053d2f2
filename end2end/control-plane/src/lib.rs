//! A small, real, local Kubernetes cluster: etcd, kube-apiserver,
//! kube-controller-manager and kube-scheduler on free loopback ports, with generated
//! certificates, RBAC, service-account signing keys, an admin kubeconfig and client
//! certificates for extra users; and either one real node ([`node`]: kubelet,
//! containerd, kube-proxy, CoreDNS, where containers really run) or simulated nodes
//! (KWOK) on which the scheduler's Pods go Running and Ready without any container
//! ([`Nodes`] decides). Every other object the API shows is made by the real
//! controllers.
//!
//! Binaries: see [`binaries`]. Every process is tied to this one (it dies with it).

pub mod apply;
pub mod binaries;
pub mod certs;
pub mod cluster;
pub mod corpus;
pub mod identity_provider;
pub mod kubeconfig;
pub mod node;
pub mod nodes;
pub mod process;
mod readiness;

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub use binaries::{Binaries, pinned_kubernetes_version};
use certs::{CertError, CertPair, CertificateAuthority};
use readiness::{Waited, answers_ok, wait_until};

#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error(
        "kube-apiserver binary not found at {0}: run end2end/kubernetes/build.sh, or set KUBEBUILDER_ASSETS"
    )]
    MissingApiServer(PathBuf),
    #[error(
        "building {component} from source failed ({status}): run end2end/kubernetes/build.sh {component} to see why"
    )]
    Build {
        component: &'static str,
        status: std::process::ExitStatus,
    },
    #[error("setting up the cluster ({what}): {message}")]
    Setup { what: &'static str, message: String },
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

pub(crate) fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ControlPlaneError {
    let what = what.into();
    move |source| ControlPlaneError::Io { what, source }
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

/// The cluster's processes, stopped in reverse order of start when dropped (so a
/// start-up that fails half-way leaves nothing running either).
#[derive(Default)]
pub(crate) struct Processes(pub(crate) Vec<(&'static str, Child)>);

impl Processes {
    pub(crate) fn get(&mut self, name: &str) -> Result<&mut Child, ControlPlaneError> {
        self.0
            .iter_mut()
            .find(|(n, _)| *n == name)
            .map(|(_, child)| child)
            .ok_or(ControlPlaneError::Setup {
                what: "finding a process",
                message: format!("{name} is not running"),
            })
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in self.0.iter_mut().rev() {
            process::stop(child);
        }
    }
}

/// The files the components share.
struct Files {
    ca: PathBuf,
    ca_key: PathBuf,
    tls_cert: PathBuf,
    tls_key: PathBuf,
    sa_key: PathBuf,
}

/// The API server's own files, besides those it shares: the service-account public
/// key and the front proxy's CA, client certificate and key.
struct ApiServerFiles {
    sa_pub: PathBuf,
    front_proxy_ca: PathBuf,
    front_proxy_cert: PathBuf,
    front_proxy_key: PathBuf,
}

/// The service and pod address ranges (they must not overlap).
const SERVICE_RANGE: &str = "10.0.0.0/16";
/// The first address of [`SERVICE_RANGE`]: the `kubernetes` Service's ClusterIP.
const API_SERVICE_IP: &str = "10.0.0.1";
pub(crate) const POD_RANGE: &str = "10.244.0.0/16";

/// Where the cluster's Pods run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Nodes {
    /// [`nodes::DEFAULT_NODES`] KWOK nodes: Pods report Running and Ready, no
    /// container runs. For benchmarks of thousands of Pods, and without root.
    #[default]
    Simulated,
    /// One real node: containers run (needs root; see [`node::unavailable`]).
    Real,
}

/// How to start a cluster.
#[derive(Default)]
pub struct StartOptions {
    /// Applied once the API server is ready, before the controllers start.
    pub objects: Vec<kube::api::DynamicObject>,
    pub nodes: Nodes,
    /// Also run an OpenID Connect provider (Dex) that the API server trusts
    /// ([`identity_provider`]).
    pub identity_provider: bool,
}

/// A running local cluster. Dropping it stops every process and removes its files.
pub struct ControlPlane {
    // Declared first: the node stops, then the control plane, then the directory goes.
    node: Option<node::RealNode>,
    processes: Processes,
    dir: tempfile::TempDir,
    apiserver_args: Vec<String>,
    binaries: Binaries,
    ca: CertificateAuthority,
    server_url: String,
    admin_kubeconfig: PathBuf,
    identity_provider: Option<identity_provider::IdentityProvider>,
}

impl ControlPlane {
    /// Starts the whole cluster with [`nodes::DEFAULT_NODES`] simulated nodes, and
    /// waits until the API server is ready, the controller-manager and scheduler are
    /// healthy and every node is Ready.
    pub fn start() -> Result<Self, ControlPlaneError> {
        Self::start_with(Vec::new())
    }

    /// [`ControlPlane::start`], applying `objects` (CRDs first, each Established) once
    /// the API server is ready and before the controllers start. The garbage collector
    /// learns the cluster's kinds when it starts and then only every 30 seconds, as in
    /// any cluster; kinds installed this way own objects from the first second.
    pub fn start_with(objects: Vec<kube::api::DynamicObject>) -> Result<Self, ControlPlaneError> {
        Self::start_opts(StartOptions {
            objects,
            ..StartOptions::default()
        })
    }

    /// Starts a cluster as `options` say (see [`ControlPlane::start_with`]).
    pub fn start_opts(options: StartOptions) -> Result<Self, ControlPlaneError> {
        let StartOptions {
            objects,
            nodes,
            identity_provider,
        } = options;
        let binaries = Binaries::locate()?;
        // The real node's namespaces come first: the API server's certificate names
        // the address the node reaches it on.
        let sandbox = match nodes {
            Nodes::Real => Some(node::Sandbox::create()?),
            Nodes::Simulated => None,
        };
        let dir = create_owned_dir()?;
        let root = dir.path();
        let ca = CertificateAuthority::new()?;
        let (files, apiserver_files) = write_certificates(root, &ca, sandbox.as_ref())?;

        let mut processes = Processes::default();
        let [etcd_port, etcd_peer_port, port] = free_ports()?;
        let etcd_url = start_etcd(&binaries, root, &mut processes, etcd_port, etcd_peer_port)?;

        let server_url = format!("https://127.0.0.1:{port}");
        let mut apiserver_args = apiserver_flags(
            root,
            &files,
            &apiserver_files,
            &etcd_url,
            port,
            &server_url,
            sandbox.as_ref(),
        );
        let identity_provider = match identity_provider {
            false => None,
            true => {
                let (provider, config) = start_identity_provider(
                    &binaries,
                    &etcd_url,
                    root,
                    &ca,
                    &files.ca,
                    &mut processes,
                )?;
                apiserver_args.push(format!("--authentication-config={}", config.display()));
                Some(provider)
            }
        };
        apiserver_args.extend(authorization_flags(root, &ca, sandbox.is_some())?);
        let admin_kubeconfig = write_admin_kubeconfig(root, &server_url, &ca)?;

        processes.0.push((
            "kube-apiserver",
            Self::spawn_apiserver(&binaries, root, &apiserver_args)?,
        ));
        let mut plane = Self {
            node: None,
            processes,
            dir,
            apiserver_args,
            binaries,
            ca,
            server_url,
            admin_kubeconfig,
            identity_provider,
        };
        plane.wait_apiserver_ready()?;
        if !objects.is_empty() {
            plane.apply(objects)?;
        }
        plane.start_controllers(&files, sandbox.is_none())?;
        if let Some(sandbox) = sandbox {
            let link = node::ControlPlaneLink {
                root: plane.dir.path(),
                api_port: port,
                ca: &plane.ca,
                ca_file: &files.ca,
                admin_kubeconfig: &plane.admin_kubeconfig,
            };
            let real = node::RealNode::start(sandbox, &link)?;
            plane.node = Some(real);
        }
        Ok(plane)
    }

    /// The real node, when the cluster has one.
    pub fn real_node(&self) -> Option<&node::RealNode> {
        self.node.as_ref()
    }

    /// kube-controller-manager, kube-scheduler and (`simulated`) KWOK; then the
    /// simulated nodes and the default StorageClass; waits until all are healthy and
    /// the simulated nodes Ready.
    fn start_controllers(
        &mut self,
        files: &Files,
        simulated: bool,
    ) -> Result<(), ControlPlaneError> {
        let [kcm_port, scheduler_port] = free_ports()?;
        // Each component authenticates as the user its bootstrap RBAC role is bound to.
        let kcm_kubeconfig =
            self.component_kubeconfig("kube-controller-manager", "system:kube-controller-manager")?;
        let scheduler_kubeconfig =
            self.component_kubeconfig("kube-scheduler", "system:kube-scheduler")?;
        let kwok_kubeconfig = self.user_kubeconfig("kwok-controller", Some("system:masters"))?;

        self.start_controller_manager(files, kcm_port, &kcm_kubeconfig)?;
        self.start_scheduler(files, scheduler_port, &scheduler_kubeconfig)?;
        if simulated {
            self.start_kwok(&kwok_kubeconfig)?;
        }

        let ca = self.ca.cert_pem();
        let admin = self
            .ca
            .client_cert("portico-setup", Some("system:masters"))?;
        self.create_cluster_objects(&ca, &admin, simulated)?;

        self.wait_healthy("kube-controller-manager", kcm_port, &ca)?;
        self.wait_healthy("kube-scheduler", scheduler_port, &ca)?;
        if !simulated {
            return Ok(());
        }
        self.wait_simulated_nodes_ready(&ca, &admin)
    }

    /// Where `component`'s output goes.
    fn log_path(&self, component: &str) -> PathBuf {
        self.dir.path().join(format!("{component}.log"))
    }

    /// Starts kube-controller-manager as the user of `kubeconfig`, serving its health
    /// on `port`.
    fn start_controller_manager(
        &mut self,
        files: &Files,
        port: u16,
        kubeconfig: &Path,
    ) -> Result<(), ControlPlaneError> {
        let mut kcm = Command::new(&self.binaries.kube_controller_manager);
        kcm.arg(format!("--kubeconfig={}", kubeconfig.display()))
            .args(delegated_auth_flags(kubeconfig))
            .args(serving_flags(port, files))
            .args([
                "--leader-elect=false",
                "--use-service-account-credentials=true",
                "--enable-hostpath-provisioner=true",
                "--profiling=false",
                // A local cluster's API server has room: the defaults (20/30) would
                // make the controllers, not Portico, the bottleneck of a benchmark.
                "--kube-api-qps=200",
                "--kube-api-burst=400",
            ])
            .arg(format!("--service-cluster-ip-range={SERVICE_RANGE}"))
            .arg(format!(
                "--service-account-private-key-file={}",
                files.sa_key.display()
            ))
            .arg(format!("--root-ca-file={}", files.ca.display()))
            .arg(format!(
                "--cluster-signing-cert-file={}",
                files.ca.display()
            ))
            .arg(format!(
                "--cluster-signing-key-file={}",
                files.ca_key.display()
            ));
        let log = self.log_path("kube-controller-manager");
        self.processes
            .0
            .push(("kube-controller-manager", spawn_logged(kcm, &log)?));
        Ok(())
    }

    /// Writes kube-scheduler's configuration (its client is `kubeconfig`'s user) and
    /// starts it, serving its health on `port`.
    fn start_scheduler(
        &mut self,
        files: &Files,
        port: u16,
        kubeconfig: &Path,
    ) -> Result<(), ControlPlaneError> {
        let scheduler_config = self.dir.path().join("kube-scheduler.yaml");
        let config = serde_json::json!({
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": kubeconfig, "qps": 200, "burst": 400},
            "leaderElection": {"leaderElect": false},
        });
        std::fs::write(&scheduler_config, config.to_string())
            .map_err(io_err("writing the scheduler's configuration"))?;
        let mut scheduler = Command::new(&self.binaries.kube_scheduler);
        scheduler
            .arg(format!("--config={}", scheduler_config.display()))
            .args(delegated_auth_flags(kubeconfig))
            .args(serving_flags(port, files));
        let log = self.log_path("kube-scheduler");
        self.processes
            .0
            .push(("kube-scheduler", spawn_logged(scheduler, &log)?));
        Ok(())
    }

    /// Starts KWOK, which runs the simulated nodes (those with its annotation) and
    /// their Pods.
    fn start_kwok(&mut self, kubeconfig: &Path) -> Result<(), ControlPlaneError> {
        let mut kwok = Command::new(&self.binaries.kwok);
        kwok.arg(format!("--kubeconfig={}", kubeconfig.display()))
            .arg(format!("--config={}", self.binaries.kwok_stages.display()))
            .arg("--manage-all-nodes=false")
            .arg(format!(
                "--manage-nodes-with-annotation-selector={}={}",
                nodes::KWOK_ANNOTATION.0,
                nodes::KWOK_ANNOTATION.1
            ))
            .arg(format!("--cidr={POD_RANGE}"))
            .arg("--node-ip=10.1.0.1")
            .arg("--node-lease-duration-seconds=40");
        let log = self.log_path("kwok");
        self.processes.0.push(("kwok", spawn_logged(kwok, &log)?));
        Ok(())
    }

    /// Creates, as `admin`, the simulated nodes (`simulated`) or the real node's RBAC,
    /// and the default StorageClass of either.
    fn create_cluster_objects(
        &self,
        ca: &str,
        admin: &CertPair,
        simulated: bool,
    ) -> Result<(), ControlPlaneError> {
        let base = self.server_url.as_str();
        readiness::with_client(Some(ca), Some(admin), |client| {
            let post = |path: &str, body: serde_json::Value| {
                client
                    .post(format!("{base}{path}"))
                    .json(&body)
                    .send()
                    .and_then(reqwest::blocking::Response::error_for_status)
                    .map(drop)
                    .map_err(|e| ControlPlaneError::Setup {
                        what: "creating the simulated nodes",
                        message: e.to_string(),
                    })
            };
            if !simulated {
                for (path, object) in node::config::rbac() {
                    post(path, object)?;
                }
                return post(
                    "/apis/storage.k8s.io/v1/storageclasses",
                    node::volumes::storage_class(),
                );
            }
            for i in 0..nodes::DEFAULT_NODES {
                let node = nodes::node(&format!("kwok-node-{i}"), &nodes::Capacity::default());
                post("/api/v1/nodes", node)?;
            }
            post(
                "/apis/storage.k8s.io/v1/storageclasses",
                nodes::storage_class(),
            )
        })
    }

    /// Waits until `component` (a controller started here) answers `/healthz` on
    /// `port`.
    fn wait_healthy(
        &mut self,
        component: &'static str,
        port: u16,
        ca: &str,
    ) -> Result<(), ControlPlaneError> {
        let log = self.log_path(component);
        wait_until(
            Waited {
                component,
                child: self.processes.get(component)?,
                log: &log,
            },
            Some(ca),
            None,
            answers_ok(format!("https://127.0.0.1:{port}/healthz")),
        )
    }

    /// Waits until every simulated node is Ready, as `admin` reads them.
    fn wait_simulated_nodes_ready(
        &mut self,
        ca: &str,
        admin: &CertPair,
    ) -> Result<(), ControlPlaneError> {
        let nodes_url = format!(
            "{}/api/v1/nodes?labelSelector={}%3D{}",
            self.server_url,
            nodes::NODE_LABEL.0,
            nodes::NODE_LABEL.1
        );
        let log = self.log_path("kwok");
        wait_until(
            Waited {
                component: "kwok (simulated nodes)",
                child: self.processes.get("kwok")?,
                log: &log,
            },
            Some(ca),
            Some(admin),
            move |client| {
                client
                    .get(&nodes_url)
                    .send()
                    .and_then(|r| r.json::<serde_json::Value>())
                    .is_ok_and(|list| nodes::all_ready(&list, nodes::DEFAULT_NODES))
            },
        )
    }

    /// Applies `objects` as the admin, on a runtime of its own (callers may be inside
    /// one, or in none).
    fn apply(&self, objects: Vec<kube::api::DynamicObject>) -> Result<(), ControlPlaneError> {
        let setup = |message: String| ControlPlaneError::Setup {
            what: "applying manifests",
            message,
        };
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(io_err("starting a runtime to apply manifests"))?;
                    runtime.block_on(async {
                        let client = self.admin_client().await?;
                        apply::apply_all(&client, objects)
                            .await
                            .map(drop)
                            .map_err(|e| setup(e.to_string()))
                    })
                })
                .join()
                .unwrap_or_else(|_| Err(setup("the applying thread panicked".into())))
        })
    }

    /// A kubeconfig for a control-plane component acting as `user`.
    fn component_kubeconfig(&self, name: &str, user: &str) -> Result<PathBuf, ControlPlaneError> {
        let pair = self.ca.client_cert(user, None)?;
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        kubeconfig::write(&path, &self.server_url, &self.ca.cert_pem(), user, &pair)
            .map_err(io_err(format!("writing the {name} kubeconfig")))?;
        Ok(path)
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
        let url = format!("{}/readyz", self.server_url);
        wait_until(
            Waited {
                component: "kube-apiserver",
                child: self.processes.get("kube-apiserver")?,
                log: &log,
            },
            Some(&self.ca.cert_pem()),
            Some(&admin),
            answers_ok(url),
        )
    }

    /// Stops kube-apiserver and starts it again on the same port and etcd, as a
    /// cluster upgrade or crash would; waits until it is ready again. The controllers
    /// keep running and reconnect, as they would.
    pub fn restart_apiserver(&mut self) -> Result<(), ControlPlaneError> {
        let apiserver = self.processes.get("kube-apiserver")?;
        process::stop(apiserver);
        *apiserver = Self::spawn_apiserver(&self.binaries, self.dir.path(), &self.apiserver_args)?;
        self.wait_apiserver_ready()
    }

    /// The OpenID Connect provider the API server trusts, when started with one.
    pub fn identity_provider(&self) -> Option<&identity_provider::IdentityProvider> {
        self.identity_provider.as_ref()
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

/// Creates the control plane's directory (first removing those of dead owners) and
/// records this process as its owner.
fn create_owned_dir() -> Result<tempfile::TempDir, ControlPlaneError> {
    remove_abandoned_dirs();
    let dir = tempfile::Builder::new()
        .prefix(DIR_PREFIX)
        .tempdir()
        .map_err(io_err("creating the control plane's directory"))?;
    std::fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string())
        .map_err(io_err("recording the control plane's owner"))?;
    Ok(dir)
}

/// Writes `contents` to `root/name` and returns its path.
fn write_file(root: &Path, name: &str, contents: &str) -> Result<PathBuf, ControlPlaneError> {
    let path = root.join(name);
    std::fs::write(&path, contents).map_err(io_err(format!("writing {name}")))?;
    Ok(path)
}

/// Generates the API server's serving certificate (valid for the real node's side of
/// its link too, with a `sandbox`), the service-account keys and the front proxy's CA
/// and client certificate, and writes them and `ca` to `root`.
fn write_certificates(
    root: &Path,
    ca: &CertificateAuthority,
    sandbox: Option<&node::Sandbox>,
) -> Result<(Files, ApiServerFiles), ControlPlaneError> {
    let extra_names: Vec<String> = sandbox.iter().map(|s| s.host_ip().to_string()).collect();
    let serving = ca.serving_cert(&extra_names)?;
    let (sa_private, sa_public) = certs::service_account_keys()?;
    let files = Files {
        ca: write_file(root, "ca.crt", &ca.cert_pem())?,
        ca_key: write_file(root, "ca.key", &ca.key_pem())?,
        tls_cert: write_file(root, "serving.crt", &serving.cert_pem)?,
        tls_key: write_file(root, "serving.key", &serving.key_pem)?,
        sa_key: write_file(root, "sa.key", &sa_private)?,
    };
    let sa_pub = write_file(root, "sa.pub", &sa_public)?;
    // API aggregation (metrics-server's metrics.k8s.io): the API server proxies to
    // it as the front proxy, with a client certificate from a CA of its own.
    let front_proxy_ca = CertificateAuthority::named("portico-front-proxy-ca")?;
    let front_proxy = front_proxy_ca.client_cert("front-proxy-client", None)?;
    let apiserver_files = ApiServerFiles {
        sa_pub,
        front_proxy_ca: write_file(root, "front-proxy-ca.crt", &front_proxy_ca.cert_pem())?,
        front_proxy_cert: write_file(root, "front-proxy-client.crt", &front_proxy.cert_pem)?,
        front_proxy_key: write_file(root, "front-proxy-client.key", &front_proxy.key_pem)?,
    };
    Ok((files, apiserver_files))
}

/// Starts etcd with its data in `root`, serving clients on `client_port` (and peers on
/// `peer_port`), and waits until it is healthy; returns its client URL.
fn start_etcd(
    binaries: &Binaries,
    root: &Path,
    processes: &mut Processes,
    client_port: u16,
    peer_port: u16,
) -> Result<String, ControlPlaneError> {
    let etcd_url = format!("http://127.0.0.1:{client_port}");
    let mut etcd_cmd = Command::new(&binaries.etcd);
    etcd_cmd
        .arg(format!("--data-dir={}", root.join("etcd").display()))
        .arg(format!("--listen-client-urls={etcd_url}"))
        .arg(format!("--advertise-client-urls={etcd_url}"))
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
        .arg(format!(
            "--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"
        ))
        .arg(format!(
            "--initial-cluster=default=http://127.0.0.1:{peer_port}"
        ))
        .arg("--unsafe-no-fsync=true");
    let etcd_log = root.join("etcd.log");
    processes
        .0
        .push(("etcd", spawn_logged(etcd_cmd, &etcd_log)?));
    wait_until(
        Waited {
            component: "etcd",
            child: processes.get("etcd")?,
            log: &etcd_log,
        },
        None,
        None,
        answers_ok(format!("{etcd_url}/health")),
    )?;
    Ok(etcd_url)
}

/// kube-apiserver's flags on `port`, storing in `etcd_url`, but for those of the
/// identity provider ([`start_identity_provider`]) and of authorization
/// ([`authorization_flags`]).
fn apiserver_flags(
    root: &Path,
    files: &Files,
    apiserver_files: &ApiServerFiles,
    etcd_url: &str,
    port: u16,
    server_url: &str,
    sandbox: Option<&node::Sandbox>,
) -> Vec<String> {
    vec![
        format!("--etcd-servers={etcd_url}"),
        format!("--secure-port={port}"),
        "--bind-address=127.0.0.1".into(),
        // With a real node, Pods reach the API server (the `kubernetes` Service's
        // endpoint) on the host's end of the node's link, where it is forwarded.
        format!(
            "--advertise-address={}",
            sandbox.map_or("127.0.0.1".to_string(), |s| s.host_ip().to_string())
        ),
        format!("--cert-dir={}", root.join("apiserver-certs").display()),
        format!("--tls-cert-file={}", files.tls_cert.display()),
        format!("--tls-private-key-file={}", files.tls_key.display()),
        format!("--client-ca-file={}", files.ca.display()),
        format!(
            "--requestheader-client-ca-file={}",
            apiserver_files.front_proxy_ca.display()
        ),
        "--requestheader-allowed-names=front-proxy-client".into(),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        format!(
            "--proxy-client-cert-file={}",
            apiserver_files.front_proxy_cert.display()
        ),
        format!(
            "--proxy-client-key-file={}",
            apiserver_files.front_proxy_key.display()
        ),
        // The aggregator dials the Service's endpoint (the node's address), not its
        // ClusterIP: the host has no kube-proxy rules.
        "--enable-aggregator-routing=true".into(),
        format!("--service-cluster-ip-range={SERVICE_RANGE}"),
        "--allow-privileged=true".into(),
        format!("--service-account-issuer={server_url}"),
        format!(
            "--service-account-key-file={}",
            apiserver_files.sa_pub.display()
        ),
        format!(
            "--service-account-signing-key-file={}",
            files.sa_key.display()
        ),
        // Fewer moving parts at start-up; flow control is not under test here.
        "--enable-priority-and-fairness=false".into(),
        "--profiling=false".into(),
    ]
}

/// Starts Dex (built if need be) and writes the API server's authentication
/// configuration trusting it; returns the provider and that configuration's path.
fn start_identity_provider(
    binaries: &Binaries,
    etcd_url: &str,
    root: &Path,
    ca: &CertificateAuthority,
    ca_file: &Path,
    processes: &mut Processes,
) -> Result<(identity_provider::IdentityProvider, PathBuf), ControlPlaneError> {
    let dex = binaries::Built::Dex.cached_or_built()?;
    let provider =
        identity_provider::IdentityProvider::start(&dex, etcd_url, root, ca, ca_file, processes)?;
    let config = write_file(
        root,
        "authentication.yaml",
        &provider
            .authentication_config(
                &ca.cert_pem(),
                binaries::apiserver_minor(&binaries.kube_apiserver)?,
            )
            .to_string(),
    )?;
    Ok((provider, config))
}

/// The API server's authorization flags. With a real node, kubelet gets what its
/// node needs and no more (the Node authorizer and NodeRestriction), and the API
/// server reaches kubelet (logs, exec) on the node's address, as a client whose
/// certificate (written to `root`) kubelet's webhook authenticates.
fn authorization_flags(
    root: &Path,
    ca: &CertificateAuthority,
    real_node: bool,
) -> Result<Vec<String>, ControlPlaneError> {
    if !real_node {
        return Ok(vec!["--authorization-mode=RBAC".into()]);
    }
    let kubelet_client = ca.client_cert("kube-apiserver-kubelet-client", Some("system:masters"))?;
    let cert = write_file(root, "kubelet-client.crt", &kubelet_client.cert_pem)?;
    let key = write_file(root, "kubelet-client.key", &kubelet_client.key_pem)?;
    Ok(vec![
        "--authorization-mode=Node,RBAC".to_string(),
        "--enable-admission-plugins=NodeRestriction".to_string(),
        "--kubelet-preferred-address-types=InternalIP".to_string(),
        format!("--kubelet-client-certificate={}", cert.display()),
        format!("--kubelet-client-key={}", key.display()),
    ])
}

/// Writes the kubeconfig of the admin (`system:masters`) to `root`.
fn write_admin_kubeconfig(
    root: &Path,
    server_url: &str,
    ca: &CertificateAuthority,
) -> Result<PathBuf, ControlPlaneError> {
    let admin = ca.client_cert("portico-admin", Some("system:masters"))?;
    let admin_kubeconfig = root.join("admin.kubeconfig");
    kubeconfig::write(
        &admin_kubeconfig,
        server_url,
        &ca.cert_pem(),
        "portico-admin",
        &admin,
    )
    .map_err(io_err("writing the admin kubeconfig"))?;
    Ok(admin_kubeconfig)
}

/// A controller's flags to serve its health on `port`, over TLS with the API server's
/// certificate.
fn serving_flags(port: u16, files: &Files) -> [String; 4] {
    [
        "--bind-address=127.0.0.1".to_string(),
        format!("--secure-port={port}"),
        format!("--tls-cert-file={}", files.tls_cert.display()),
        format!("--tls-private-key-file={}", files.tls_key.display()),
    ]
}

/// A controller's flags to have the API server, reached as `kubeconfig`'s user,
/// authenticate and authorize the controller's own clients.
fn delegated_auth_flags(kubeconfig: &Path) -> [String; 2] {
    [
        format!("--authentication-kubeconfig={}", kubeconfig.display()),
        format!("--authorization-kubeconfig={}", kubeconfig.display()),
    ]
}

pub(crate) fn spawn_logged(mut cmd: Command, log: &Path) -> Result<Child, ControlPlaneError> {
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
