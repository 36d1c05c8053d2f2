//! The local cluster's one real node: containerd with runc, the CNI bridge, kubelet,
//! kube-proxy and CoreDNS, in namespaces of their own ([`sandbox`]), running images
//! built on this machine from Debian packages (`end2end/images/build.sh`). Persistent
//! volumes are directories of the node ([`volumes`]).
//!
//! The API server listens on loopback only; the node reaches it through a forwarder
//! on the host's end of its veth pair, and the API server reaches kubelet (logs, exec)
//! on the node's address.

pub mod config;
pub mod images;
pub mod sandbox;
pub mod volumes;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::binaries::NodeBinaries;
use crate::certs::{CertPair, CertificateAuthority};
use crate::readiness::{Waited, answers_ok, wait_until};
use crate::{ControlPlaneError, POD_RANGE, Processes, io_err, kubeconfig, spawn_logged};
use config::Layout;
pub use sandbox::Sandbox;

/// The real node's name (and its hostname inside its namespace).
pub const NODE_NAME: &str = "portico-node";

/// What the node needs of the control plane that started it.
pub struct ControlPlaneLink<'a> {
    pub root: &'a Path,
    pub api_port: u16,
    pub ca: &'a CertificateAuthority,
    pub ca_file: &'a Path,
    pub admin_kubeconfig: &'a Path,
}

/// A running real node. Dropping it stops every process of it and ends its namespaces.
pub struct RealNode {
    // Declared first: the processes stop before the namespaces end. Held for its Drop.
    #[allow(dead_code)]
    processes: Processes,
    provisioner: volumes::Provisioner,
    sandbox: Sandbox,
    layout: Layout,
}

impl RealNode {
    /// Starts containerd, imports the images, and starts kubelet, kube-proxy and
    /// CoreDNS in `sandbox`; waits until the Node is Ready and DNS answers.
    pub fn start(sandbox: Sandbox, link: &ControlPlaneLink<'_>) -> Result<Self, ControlPlaneError> {
        let binaries = NodeBinaries::locate()?;
        let layout = Layout {
            dir: link.root.join("node"),
        };
        create_node_dirs(&layout)?;
        let node_ip = sandbox.node_ip();
        let kubeconfigs = NodeKubeconfigs {
            dir: &layout.dir,
            server: format!("https://{}:{}", sandbox.host_ip(), link.api_port),
            ca: link.ca,
        };
        let kubelet_kubeconfig = write_node_config(&layout, &sandbox, link, &kubeconfigs)?;
        let metrics_server = write_metrics_server_files(&layout, node_ip, link.ca, &kubeconfigs)?;

        // Owned here, not by the steps: whatever started stops if a later step fails.
        let mut processes = Processes::default();
        start_api_forwarder(&mut processes, &sandbox, link.api_port, &layout)?;
        start_containerd(&mut processes, &sandbox, &layout)?;
        start_kubelet(
            &mut processes,
            &sandbox,
            &binaries,
            &layout,
            &kubelet_kubeconfig,
        )?;
        start_proxy_and_dns(&mut processes, &sandbox, &binaries, &layout)?;
        start_metrics_server(
            &mut processes,
            &sandbox,
            &binaries,
            &layout,
            &metrics_server,
        )?;

        let provisioner = volumes::Provisioner::start(
            link.admin_kubeconfig.to_path_buf(),
            NODE_NAME.into(),
            layout.volumes(),
        )?;

        let admin = link
            .ca
            .client_cert("portico-node-setup", Some("system:masters"))?;
        let ca = link.ca.cert_pem();
        wait_until_node_ready(&mut processes, &layout, node_ip, link.api_port, &ca, &admin)?;
        Self::register_metrics(
            &mut processes,
            &layout.log("metrics-server"),
            node_ip,
            link.api_port,
            &ca,
            &admin,
        )?;
        Ok(Self {
            processes,
            provisioner,
            sandbox,
            layout,
        })
    }

    /// Registers metrics.k8s.io once metrics-server answers (an APIService without a
    /// live backend fails discovery for every client), then waits until the API server
    /// serves it through the aggregator (front-proxy authentication and all). Not its
    /// readiness: that waits for a Pod measured twice, and no Pod runs yet.
    fn register_metrics(
        processes: &mut Processes,
        log: &Path,
        node_ip: std::net::Ipv4Addr,
        api_port: u16,
        ca: &str,
        admin: &CertPair,
    ) -> Result<(), ControlPlaneError> {
        wait_until(
            Waited {
                component: "metrics-server",
                child: processes.get("metrics-server")?,
                log,
            },
            Some(ca),
            None,
            answers_ok(format!(
                "https://{node_ip}:{}/livez",
                config::METRICS_SERVER_PORT
            )),
        )?;
        let api = format!("https://127.0.0.1:{api_port}");
        crate::readiness::with_client(Some(ca), Some(admin), |client| {
            for (path, object) in config::metrics_aggregation(node_ip, ca) {
                client
                    .post(format!("{api}{path}"))
                    .json(&object)
                    .send()
                    .and_then(reqwest::blocking::Response::error_for_status)
                    .map_err(|e| ControlPlaneError::Setup {
                        what: "registering metrics.k8s.io",
                        message: e.to_string(),
                    })?;
            }
            Ok(())
        })?;
        wait_until(
            Waited {
                component: "metrics-server",
                child: processes.get("metrics-server")?,
                log,
            },
            Some(ca),
            Some(admin),
            answers_ok(format!("{api}/apis/metrics.k8s.io/v1beta1/nodes")),
        )
    }

    /// Imports an image archive into the node's containerd (an image built here,
    /// such as Portico's own: no registry is reachable).
    pub fn import_image(&self, archive: &Path) -> Result<(), ControlPlaneError> {
        let named = archive.display().to_string();
        images::import(&self.layout.containerd_socket(), archive, &named)
    }

    /// The node's address (its InternalIP): NodePorts answer here, from the host.
    pub fn ip(&self) -> std::net::Ipv4Addr {
        self.sandbox.node_ip()
    }

    /// The node's directory (its logs: containerd.log, kubelet.log, …).
    pub fn dir(&self) -> &Path {
        &self.layout.dir
    }

    /// The namespaces' sandbox (its interface and cgroup names, for tests).
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Stops the volume provisioner first (it talks to the API server).
    fn stop(&mut self) {
        self.provisioner.stop();
    }
}

impl Drop for RealNode {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Creates the node's directories: static Pod manifests, Pod logs, volumes, the CNI
/// configuration and its address allocations, and kubelet's root.
fn create_node_dirs(layout: &Layout) -> Result<(), ControlPlaneError> {
    for sub in [
        "manifests",
        "pod-logs",
        "volumes",
        "cni",
        "cni-ipam",
        "kubelet",
    ] {
        let path = layout.dir.join(sub);
        std::fs::create_dir_all(&path).map_err(io_err(format!("creating {}", path.display())))?;
    }
    Ok(())
}

/// Writes `contents` to `path` and returns the path.
fn write_file(path: PathBuf, contents: String) -> Result<PathBuf, ControlPlaneError> {
    std::fs::write(&path, contents).map_err(io_err(format!("writing {}", path.display())))?;
    Ok(path)
}

/// Kubeconfigs for the node's components, in the node's directory: they reach the
/// API server at `server`, through the forwarder on the host's end of the node's link.
struct NodeKubeconfigs<'a> {
    dir: &'a Path,
    server: String,
    ca: &'a CertificateAuthority,
}

impl NodeKubeconfigs<'_> {
    /// Writes `<name>.kubeconfig` for `user` (in `group`) and returns its path.
    fn write(
        &self,
        name: &str,
        user: &str,
        group: Option<&str>,
    ) -> Result<PathBuf, ControlPlaneError> {
        let pair = self.ca.client_cert(user, group)?;
        let path = self.dir.join(format!("{name}.kubeconfig"));
        kubeconfig::write(&path, &self.server, &self.ca.cert_pem(), user, &pair)
            .map_err(io_err(format!("writing the {name} kubeconfig")))?;
        Ok(path)
    }
}

/// Writes the configuration of containerd, the CNI bridge, kubelet (with its serving
/// certificate), kube-proxy and CoreDNS, with their kubeconfigs; returns kubelet's
/// kubeconfig, which its command line names.
fn write_node_config(
    layout: &Layout,
    sandbox: &Sandbox,
    link: &ControlPlaneLink<'_>,
    kubeconfigs: &NodeKubeconfigs<'_>,
) -> Result<PathBuf, ControlPlaneError> {
    let node_ip = sandbox.node_ip();
    write_file(layout.containerd_config(), config::containerd(layout))?;
    write_file(
        layout.cni_dir().join("10-portico.conflist"),
        config::cni(layout).to_string(),
    )?;
    let serving = link
        .ca
        .serving_cert(&[node_ip.to_string(), NODE_NAME.into()])?;
    let kubelet_settings = config::KubeletSettings {
        node_ip,
        cgroup_root: sandbox.cgroup_root(),
        client_ca: link.ca_file,
        serving_cert: &write_file(layout.dir.join("kubelet.crt"), serving.cert_pem)?,
        serving_key: &write_file(layout.dir.join("kubelet.key"), serving.key_pem)?,
    };
    write_file(
        layout.kubelet_config(),
        config::kubelet(layout, &kubelet_settings).to_string(),
    )?;
    let kubelet_kubeconfig = kubeconfigs.write(
        "kubelet",
        &format!("system:node:{NODE_NAME}"),
        Some("system:nodes"),
    )?;
    let proxy_kubeconfig = kubeconfigs.write("kube-proxy", "system:kube-proxy", None)?;
    write_file(
        layout.proxy_config(),
        config::kube_proxy(&proxy_kubeconfig, node_ip, POD_RANGE).to_string(),
    )?;
    // CoreDNS only reads (Services, EndpointSlices, Namespaces): the view role.
    let dns_kubeconfig = kubeconfigs.write("coredns", "portico:coredns", None)?;
    write_file(
        layout.corefile(),
        config::corefile(&dns_kubeconfig, node_ip),
    )?;
    Ok(kubelet_kubeconfig)
}

/// metrics-server's kubeconfig and serving certificate.
struct MetricsServerFiles {
    kubeconfig: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

/// Writes metrics-server's kubeconfig and its serving certificate and key.
fn write_metrics_server_files(
    layout: &Layout,
    node_ip: std::net::Ipv4Addr,
    ca: &CertificateAuthority,
    kubeconfigs: &NodeKubeconfigs<'_>,
) -> Result<MetricsServerFiles, ControlPlaneError> {
    // metrics-server reads kubelet's summary as `portico:metrics-server` (the same
    // client certificate kubelet's x509 authentication accepts) and serves
    // metrics.k8s.io on the node's address, for the aggregator to reach.
    let kubeconfig = kubeconfigs.write("metrics-server", config::METRICS_SERVER_USER, None)?;
    let serving =
        ca.serving_cert(&[node_ip.to_string(), "metrics-server.kube-system.svc".into()])?;
    let cert = write_file(layout.dir.join("metrics-server.crt"), serving.cert_pem)?;
    let key = write_file(layout.dir.join("metrics-server.key"), serving.key_pem)?;
    Ok(MetricsServerFiles {
        kubeconfig,
        cert,
        key,
    })
}

/// Forwards the API server (on loopback) to the host's end of the node's link, where
/// the node's components reach it.
fn start_api_forwarder(
    processes: &mut Processes,
    sandbox: &Sandbox,
    api_port: u16,
    layout: &Layout,
) -> Result<(), ControlPlaneError> {
    let mut forwarder = Command::new("socat");
    forwarder
        .arg(format!(
            "TCP-LISTEN:{api_port},bind={},fork,reuseaddr",
            sandbox.host_ip()
        ))
        .arg(format!("TCP:127.0.0.1:{api_port}"));
    processes.0.push((
        "api-forwarder",
        spawn_logged(forwarder, &layout.log("api-forwarder"))?,
    ));
    Ok(())
}

/// Starts containerd in the node's namespaces, waits until it answers, and imports
/// the node's images into it.
fn start_containerd(
    processes: &mut Processes,
    sandbox: &Sandbox,
    layout: &Layout,
) -> Result<(), ControlPlaneError> {
    let mut containerd = sandbox.command("containerd");
    containerd.arg("--config").arg(layout.containerd_config());
    let containerd_log = layout.log("containerd");
    processes
        .0
        .push(("containerd", spawn_logged(containerd, &containerd_log)?));
    let socket = layout.containerd_socket();
    wait_until(
        Waited {
            component: "containerd",
            child: processes.get("containerd")?,
            log: &containerd_log,
        },
        None,
        None,
        |_| {
            images::ctr(&socket)
                .arg("version")
                .output()
                .is_ok_and(|o| o.status.success())
        },
    )?;
    images::import_all(&socket)
}

/// Starts kubelet in the node's namespaces, as the node [`NODE_NAME`].
fn start_kubelet(
    processes: &mut Processes,
    sandbox: &Sandbox,
    binaries: &NodeBinaries,
    layout: &Layout,
    kubeconfig: &Path,
) -> Result<(), ControlPlaneError> {
    let mut kubelet = sandbox.command(&binaries.kubelet);
    kubelet
        .arg(format!("--config={}", layout.kubelet_config().display()))
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .arg(format!("--root-dir={}", layout.kubelet_root().display()))
        .arg(format!("--hostname-override={NODE_NAME}"))
        .arg(format!("--node-ip={}", sandbox.node_ip()))
        .arg("--v=1");
    processes
        .0
        .push(("kubelet", spawn_logged(kubelet, &layout.log("kubelet"))?));
    Ok(())
}

/// Starts kube-proxy and CoreDNS in the node's namespaces, from the configuration
/// [`write_node_config`] wrote.
fn start_proxy_and_dns(
    processes: &mut Processes,
    sandbox: &Sandbox,
    binaries: &NodeBinaries,
    layout: &Layout,
) -> Result<(), ControlPlaneError> {
    let mut proxy = sandbox.command(&binaries.kube_proxy);
    proxy.arg(format!("--config={}", layout.proxy_config().display()));
    processes.0.push((
        "kube-proxy",
        spawn_logged(proxy, &layout.log("kube-proxy"))?,
    ));

    let mut dns = sandbox.command(&binaries.coredns);
    dns.arg("-conf").arg(layout.corefile());
    processes
        .0
        .push(("coredns", spawn_logged(dns, &layout.log("coredns"))?));
    Ok(())
}

/// Starts metrics-server in the node's namespaces, serving on the node's address.
fn start_metrics_server(
    processes: &mut Processes,
    sandbox: &Sandbox,
    binaries: &NodeBinaries,
    layout: &Layout,
    files: &MetricsServerFiles,
) -> Result<(), ControlPlaneError> {
    let mut metrics = sandbox.command(&binaries.metrics_server);
    for flag in [
        "--kubeconfig",
        "--authentication-kubeconfig",
        "--authorization-kubeconfig",
    ] {
        metrics.arg(format!("{flag}={}", files.kubeconfig.display()));
    }
    metrics
        .arg(format!("--bind-address={}", sandbox.node_ip()))
        .arg(format!("--secure-port={}", config::METRICS_SERVER_PORT))
        .arg(format!("--tls-cert-file={}", files.cert.display()))
        .arg(format!("--tls-private-key-file={}", files.key.display()))
        // The node's name does not resolve; its InternalIP is kubelet's serving name.
        .arg("--kubelet-preferred-address-types=InternalIP")
        // Its shortest (more than kubelet's 10 s request timeout): a new Pod's usage
        // shows within half a minute.
        .arg("--metric-resolution=15s");
    processes.0.push((
        "metrics-server",
        spawn_logged(metrics, &layout.log("metrics-server"))?,
    ));
    Ok(())
}

/// Waits until the API server reports the Node Ready, then until kube-proxy is
/// healthy and CoreDNS ready.
fn wait_until_node_ready(
    processes: &mut Processes,
    layout: &Layout,
    node_ip: std::net::Ipv4Addr,
    api_port: u16,
    ca: &str,
    admin: &CertPair,
) -> Result<(), ControlPlaneError> {
    let node_url = format!("https://127.0.0.1:{api_port}/api/v1/nodes/{NODE_NAME}");
    let kubelet_log = layout.log("kubelet");
    wait_until(
        Waited {
            component: "kubelet (the real node)",
            child: processes.get("kubelet")?,
            log: &kubelet_log,
        },
        Some(ca),
        Some(admin),
        move |client| {
            client
                .get(&node_url)
                .send()
                .and_then(|r| r.json::<serde_json::Value>())
                .is_ok_and(|node| crate::nodes::is_ready(&node))
        },
    )?;
    let proxy_log = layout.log("kube-proxy");
    wait_until(
        Waited {
            component: "kube-proxy",
            child: processes.get("kube-proxy")?,
            log: &proxy_log,
        },
        None,
        None,
        answers_ok(format!(
            "http://{node_ip}:{}/healthz",
            config::PROXY_HEALTH_PORT
        )),
    )?;
    let dns_log = layout.log("coredns");
    wait_until(
        Waited {
            component: "coredns",
            child: processes.get("coredns")?,
            log: &dns_log,
        },
        None,
        None,
        answers_ok(format!("http://{node_ip}:{}/ready", config::DNS_READY_PORT)),
    )
}

/// Whether this process may make a real node (root, and the programs it runs are
/// installed); otherwise why not, in one line.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    let missing: Vec<&str> = [
        "containerd",
        "runc",
        "ctr",
        "unshare",
        "nsenter",
        "tini",
        "socat",
        "ip",
        "iptables",
    ]
    .into_iter()
    .filter(|program| !on_path(program))
    .collect();
    if !Path::new("/usr/lib/cni/bridge").is_file() {
        return Some("the CNI plugins are not installed (containernetworking-plugins)".into());
    }
    (!missing.is_empty()).then(|| format!("{} not installed", missing.join(", ")))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
