//! The real node's configuration files: containerd, the CNI network, kubelet,
//! kube-proxy and CoreDNS. Every path a component would write on the host by default
//! is pointed into the node's directory (or lands on the node's own /run and /var/log).

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::NODE_NAME;

/// The Pods' addresses on the node's bridge (inside the cluster's Pod range).
pub const POD_SUBNET: &str = "10.244.0.0/24";
/// The pause image containerd starts every Pod's sandbox from (built here).
pub const SANDBOX_IMAGE: &str = "portico.local/pause:3.10";
/// CoreDNS answers readiness here (its `ready` plugin), on the node's address.
pub const DNS_READY_PORT: u16 = 8181;
/// kube-proxy's health endpoint, on the node's address.
pub const PROXY_HEALTH_PORT: u16 = 10256;

/// Where each component's files go, under the node's directory.
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn containerd_socket(&self) -> PathBuf {
        self.dir.join("containerd.sock")
    }
    pub fn containerd_config(&self) -> PathBuf {
        self.dir.join("containerd.toml")
    }
    pub fn cni_dir(&self) -> PathBuf {
        self.dir.join("cni")
    }
    pub fn kubelet_config(&self) -> PathBuf {
        self.dir.join("kubelet.json")
    }
    pub fn kubelet_root(&self) -> PathBuf {
        self.dir.join("kubelet")
    }
    pub fn proxy_config(&self) -> PathBuf {
        self.dir.join("kube-proxy.json")
    }
    pub fn corefile(&self) -> PathBuf {
        self.dir.join("Corefile")
    }
    /// Where the node's volume provisioner makes each PersistentVolume's directory.
    pub fn volumes(&self) -> PathBuf {
        self.dir.join("volumes")
    }
    pub fn log(&self, component: &str) -> PathBuf {
        self.dir.join(format!("{component}.log"))
    }
}

fn quote(path: &Path) -> String {
    // TOML basic strings: the paths are ours (a temporary directory), but quote anyway.
    format!("{:?}", path.display().to_string())
}

/// containerd 1.6's configuration (format version 2).
pub fn containerd(layout: &Layout) -> String {
    let dir = &layout.dir;
    format!(
        r#"version = 2
root = {root}
state = {state}

[grpc]
  address = {socket}

[plugins."io.containerd.internal.v1.opt"]
  path = {opt}

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  # This machine refuses to lower oom_score_adj: without this every sandbox fails
  # ("can't get final child's PID from pipe") as the pause container asks for -998.
  restrict_oom_score_adj = true
  enable_selinux = false

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = {cni}
"#,
        root = quote(&dir.join("containerd/root")),
        state = quote(&dir.join("containerd/state")),
        socket = quote(&layout.containerd_socket()),
        opt = quote(&dir.join("containerd/opt")),
        cni = quote(&layout.cni_dir()),
    )
}

/// The Pod network: a bridge with masquerading (Pods reach the host and the API
/// server forwarder as the node), hairpin (a Pod reaches itself through its Service),
/// host-local addresses kept in the node's directory, and host ports.
pub fn cni(layout: &Layout) -> serde_json::Value {
    json!({
        "cniVersion": "1.0.0",
        "name": "portico",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": layout.dir.join("cni-ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    })
}

/// What kubelet needs to know of the rest of the cluster.
pub struct KubeletSettings<'a> {
    pub node_ip: Ipv4Addr,
    pub cgroup_root: &'a str,
    pub client_ca: &'a Path,
    pub serving_cert: &'a Path,
    pub serving_key: &'a Path,
}

pub fn kubelet(layout: &Layout, s: &KubeletSettings<'_>) -> serde_json::Value {
    let dir = &layout.dir;
    json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        // The host is cgroup v1 without systemd (KEP-5573: 1.35 refuses v1 otherwise).
        "failCgroupV1": false,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": format!("/{}", s.cgroup_root),
        "failSwapOn": false,
        "containerRuntimeEndpoint": format!("unix://{}", layout.containerd_socket().display()),
        "staticPodPath": dir.join("manifests"),
        "podLogsDir": dir.join("pod-logs"),
        "address": s.node_ip.to_string(),
        "port": 10250,
        "readOnlyPort": 0,
        "healthzBindAddress": s.node_ip.to_string(),
        "healthzPort": 10248,
        "tlsCertFile": s.serving_cert,
        "tlsPrivateKeyFile": s.serving_key,
        "authentication": {
            "anonymous": {"enabled": false},
            "webhook": {"enabled": true},
            "x509": {"clientCAFile": s.client_ca},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": "cluster.local",
        // CoreDNS runs on the node itself, on its address.
        "clusterDNS": [s.node_ip.to_string()],
        // No upstream resolver: the sandbox has no way out, and the host's
        // resolv.conf would send Pods' lookups to nowhere.
        "resolvConf": "",
        // This machine refuses to lower oom_score_adj.
        "oomScoreAdj": 0,
        "serializeImagePulls": false,
        "rotateCertificates": false,
        // The host's disk is shared with everything else: evict only when it is
        // really full, not at the defaults' 10-15 % free.
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 110,
    })
}

pub fn kube_proxy(kubeconfig: &Path, node_ip: Ipv4Addr, pod_range: &str) -> serde_json::Value {
    json!({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig},
        "mode": "iptables",
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": pod_range,
        "bindAddress": node_ip.to_string(),
        "healthzBindAddress": format!("{node_ip}:{PROXY_HEALTH_PORT}"),
        "metricsBindAddress": "127.0.0.1:10249",
        // Conntrack sysctls are the host's business (0 leaves them as they are).
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
        // NodePorts on 127.0.0.1 would need route_localnet; the node's address suffices.
        "iptables": {"localhostNodePorts": false},
        "nodePortAddresses": [format!("{node_ip}/32")],
    })
}

/// CoreDNS on the node's address: the cluster's Services and Pods, nothing upstream.
pub fn corefile(kubeconfig: &Path, node_ip: Ipv4Addr) -> String {
    format!(
        ".:53 {{
    bind {node_ip}
    errors
    health {node_ip}:8080
    ready {node_ip}:{DNS_READY_PORT}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    cache 5
    loop
    reload
}}
",
        kubeconfig = kubeconfig.display()
    )
}

/// The user metrics-server authenticates as (to the API server and to kubelet).
pub const METRICS_SERVER_USER: &str = "portico:metrics-server";

/// Where metrics-server serves on the node's address (kubelet holds 10250 there).
pub const METRICS_SERVER_PORT: u16 = 4443;

/// What CoreDNS may read (it authenticates as `portico:coredns`): the objects
/// upstream's coredns ClusterRole names; and what metrics-server needs (upstream's
/// manifests: read nodes' metrics and Pods, delegate authentication and authorization,
/// read the front proxy's CA), with metrics.k8s.io readable by view, edit and admin.
/// As (API path, object) pairs to create.
pub fn rbac() -> [(&'static str, serde_json::Value); 7] {
    let cluster_binding = |name: &str, role: &str, user: &str| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        })
    };
    const CLUSTER_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/clusterroles";
    const CLUSTER_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings";
    [
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "portico:coredns"},
                "rules": [
                    {"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"], "verbs": ["list", "watch"]},
                    {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list", "watch"]},
                ],
            }),
        ),
        (
            CLUSTER_BINDINGS,
            cluster_binding("portico:coredns", "portico:coredns", "portico:coredns"),
        ),
        (
            CLUSTER_ROLES,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "system:metrics-server"},
                "rules": [
                    {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                    {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
                ],
            }),
        ),
        (
            CLUSTER_BINDINGS,
            cluster_binding(
                "system:metrics-server",
                "system:metrics-server",
                METRICS_SERVER_USER,
            ),
        ),
        (
            CLUSTER_BINDINGS,
            cluster_binding(
                "metrics-server:system:auth-delegator",
                "system:auth-delegator",
                METRICS_SERVER_USER,
            ),
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "metrics-server-auth-reader", "namespace": "kube-system"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": METRICS_SERVER_USER}],
            }),
        ),
        (
            CLUSTER_ROLES,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {
                    "name": "system:aggregated-metrics-reader",
                    "labels": {
                        "rbac.authorization.k8s.io/aggregate-to-view": "true",
                        "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                        "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                    },
                },
                "rules": [
                    {"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]},
                ],
            }),
        ),
    ]
}

/// How the API server finds metrics-server, which runs on the node's address: a
/// Service without a selector, its EndpointSlice (the port named on both, or the
/// aggregator skips it), and the APIService of metrics.k8s.io. Registered only once
/// metrics-server answers: an unavailable APIService fails every discovery.
pub fn metrics_aggregation(
    node_ip: Ipv4Addr,
    ca_pem: &str,
) -> [(&'static str, serde_json::Value); 3] {
    use base64::Engine as _;
    [
        (
            "/api/v1/namespaces/kube-system/services",
            json!({
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "metrics-server", "namespace": "kube-system"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": METRICS_SERVER_PORT, "protocol": "TCP"}]},
            }),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
            json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "name": "metrics-server-node",
                    "namespace": "kube-system",
                    "labels": {
                        "kubernetes.io/service-name": "metrics-server",
                        "endpointslice.kubernetes.io/managed-by": "control-plane.portico.local",
                    },
                },
                "addressType": "IPv4",
                "endpoints": [{"addresses": [node_ip.to_string()], "conditions": {"ready": true}, "nodeName": NODE_NAME}],
                "ports": [{"name": "https", "port": METRICS_SERVER_PORT, "protocol": "TCP"}],
            }),
        ),
        (
            "/apis/apiregistration.k8s.io/v1/apiservices",
            json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": "v1beta1.metrics.k8s.io"},
                "spec": {
                    "group": "metrics.k8s.io",
                    "version": "v1beta1",
                    "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
                    "groupPriorityMinimum": 100,
                    "versionPriority": 100,
                },
            }),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containerd_config_is_toml_pointing_into_the_node_directory() {
        let layout = Layout {
            dir: PathBuf::from("/tmp/portico-cp-x/node"),
        };
        let text = containerd(&layout);
        assert!(text.contains(r#"root = "/tmp/portico-cp-x/node/containerd/root""#));
        assert!(text.contains("restrict_oom_score_adj = true"));
        assert!(text.contains(SANDBOX_IMAGE));
    }

    #[test]
    fn metrics_server_is_found_by_a_named_port_and_valid_labels() {
        let [(_, service), (_, slice), (_, api)] =
            metrics_aggregation(Ipv4Addr::new(10, 200, 3, 2), "PEM");
        // The aggregator skips a slice whose port has no name, or another name.
        assert_eq!(service["spec"]["ports"][0]["name"], "https");
        assert_eq!(slice["ports"][0]["name"], "https");
        assert_eq!(slice["ports"][0]["port"], METRICS_SERVER_PORT);
        assert_eq!(slice["endpoints"][0]["addresses"][0], "10.200.3.2");
        // Label values: letters, digits, '-', '_', '.'; no '/'.
        for value in slice["metadata"]["labels"]
            .as_object()
            .expect("labels")
            .values()
        {
            let value = value.as_str().expect("a string");
            assert!(
                value.len() <= 63
                    && value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
                "{value}"
            );
        }
        assert_eq!(api["spec"]["service"]["name"], service["metadata"]["name"]);
        assert_eq!(api["spec"]["caBundle"], "UEVN");
    }

    #[test]
    fn kubelet_uses_the_node_address_for_dns_and_serving() {
        let layout = Layout {
            dir: PathBuf::from("/n"),
        };
        let config = kubelet(
            &layout,
            &KubeletSettings {
                node_ip: Ipv4Addr::new(10, 200, 3, 2),
                cgroup_root: "portico-node-1-2",
                client_ca: Path::new("/ca"),
                serving_cert: Path::new("/c"),
                serving_key: Path::new("/k"),
            },
        );
        assert_eq!(config["clusterDNS"][0], "10.200.3.2");
        assert_eq!(config["cgroupRoot"], "/portico-node-1-2");
        assert_eq!(config["failCgroupV1"], false);
    }
}
