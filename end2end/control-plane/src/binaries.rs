//! Where the cluster's programs come from. etcd is the `etcd-bin-vendored` crate's
//! binary; every other component is built from source through the Go module proxy by
//! `end2end/kubernetes/build.sh` and cached under `~/.cache/portico` (or
//! `$PORTICO_CACHE_DIR`), keyed by its pinned version. A component missing from the
//! cache is built on first use. `$KUBEBUILDER_ASSETS` (the envtest convention) supplies
//! etcd and kube-apiserver; components it lacks are built as above, and said so.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ControlPlaneError;

/// The Kubernetes version the components are built at (from the wrapper's go.mod).
pub fn pinned_kubernetes_version() -> &'static str {
    pinned(include_str!("../../kubernetes/go.mod"), "k8s.io/kubernetes")
}

/// The KWOK release the simulated nodes run on (from its wrapper's go.mod).
pub fn pinned_kwok_version() -> &'static str {
    pinned(include_str!("../../kwok/go.mod"), "sigs.k8s.io/kwok")
}

/// The CoreDNS release the real node runs (from its wrapper's go.mod).
pub fn pinned_coredns_version() -> &'static str {
    pinned(
        include_str!("../../coredns/go.mod"),
        "github.com/coredns/coredns",
    )
}

/// The metrics-server release that serves metrics.k8s.io on the real node.
pub fn pinned_metrics_server_version() -> &'static str {
    pinned(
        include_str!("../../metrics-server/go.mod"),
        "sigs.k8s.io/metrics-server",
    )
}

/// The Dex build the identity provider runs (a pseudo-version: see end2end/dex).
pub fn pinned_dex_version() -> &'static str {
    include_str!("../../dex/version").trim()
}

fn pinned(go_mod: &'static str, module: &str) -> &'static str {
    go_mod
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(module)).then(|| words.next())?
        })
        .unwrap_or("unknown")
}

/// The minor version a kube-apiserver binary reports (`--version` prints "Kubernetes
/// v1.32.13"): KUBEBUILDER_ASSETS may hold another version than the pinned one.
pub fn apiserver_minor(kube_apiserver: &Path) -> Result<u32, ControlPlaneError> {
    let out = Command::new(kube_apiserver)
        .arg("--version")
        .output()
        .map_err(|e| ControlPlaneError::Client(format!("{}: {e}", kube_apiserver.display())))?;
    let printed = String::from_utf8_lossy(&out.stdout);
    minor_of(&printed).ok_or_else(|| {
        ControlPlaneError::Client(format!(
            "{} --version printed {printed:?}, not \"Kubernetes v1.N…\"",
            kube_apiserver.display()
        ))
    })
}

fn minor_of(printed: &str) -> Option<u32> {
    let version = printed.split_whitespace().find(|w| w.starts_with("v1."))?;
    version.split('.').nth(1)?.parse().ok()
}

/// A program of the local cluster that `build.sh` builds from source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Kwok,
    Kubelet,
    KubeProxy,
    CoreDns,
    MetricsServer,
    Dex,
}

impl Built {
    /// Its name: the binary's, and `build.sh`'s argument.
    pub fn name(self) -> &'static str {
        match self {
            Built::KubeApiserver => "kube-apiserver",
            Built::KubeControllerManager => "kube-controller-manager",
            Built::KubeScheduler => "kube-scheduler",
            Built::Kwok => "kwok",
            Built::Kubelet => "kubelet",
            Built::KubeProxy => "kube-proxy",
            Built::CoreDns => "coredns",
            Built::MetricsServer => "metrics-server",
            Built::Dex => "dex",
        }
    }

    fn version(self) -> &'static str {
        match self {
            Built::Kwok => pinned_kwok_version(),
            Built::CoreDns => pinned_coredns_version(),
            Built::MetricsServer => pinned_metrics_server_version(),
            Built::Dex => pinned_dex_version(),
            _ => pinned_kubernetes_version(),
        }
    }

    /// Where `build.sh` caches it.
    pub fn cached_path(self) -> Result<PathBuf, ControlPlaneError> {
        let cache = match std::env::var_os("PORTICO_CACHE_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from(std::env::var_os("HOME").ok_or(ControlPlaneError::NoCacheDir)?)
                .join(".cache/portico"),
        };
        Ok(cache.join(format!("{}-{}", self.name(), self.version())))
    }

    /// The cached binary, built first when it is not there yet.
    pub(crate) fn cached_or_built(self) -> Result<PathBuf, ControlPlaneError> {
        let path = self.cached_path()?;
        if path.is_file() && (self != Built::Kwok || stages_of(&path).is_file()) {
            return Ok(path);
        }
        tracing::info!(
            component = self.name(),
            version = self.version(),
            "building from source through the Go module proxy (once; later starts use the cache)"
        );
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kubernetes/build.sh");
        let status = Command::new("bash")
            .arg(&script)
            .arg(self.name())
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|source| ControlPlaneError::Io {
                what: format!("running {}", script.display()),
                source,
            })?;
        if !status.success() || !path.is_file() {
            return Err(ControlPlaneError::Build {
                component: self.name(),
                status,
            });
        }
        Ok(path)
    }
}

/// KWOK's stage configuration, which `build.sh` writes beside its binary.
fn stages_of(kwok: &Path) -> PathBuf {
    let mut name = kwok.as_os_str().to_owned();
    name.push(".stages.yaml");
    PathBuf::from(name)
}

/// Every program the local cluster runs.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub etcd: PathBuf,
    pub kube_apiserver: PathBuf,
    pub kube_controller_manager: PathBuf,
    pub kube_scheduler: PathBuf,
    pub kwok: PathBuf,
    /// The stages KWOK plays (node heartbeat, pod ready, …).
    pub kwok_stages: PathBuf,
}

impl Binaries {
    /// Finds every program, building the ones not cached yet.
    pub fn locate() -> Result<Self, ControlPlaneError> {
        let assets = std::env::var_os("KUBEBUILDER_ASSETS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let vendored_etcd = || -> Result<PathBuf, ControlPlaneError> {
            Ok(etcd_bin_vendored::etcd_bin_path()
                .map_err(|e| ControlPlaneError::Client(format!("no vendored etcd: {e:?}")))?
                .to_path_buf())
        };
        let (etcd, kube_apiserver) = match &assets {
            // A directory of other Kubernetes binaries without etcd (the compatibility
            // run's) takes the vendored one.
            Some(dir) => match dir.join("etcd") {
                etcd if etcd.is_file() => (etcd, dir.join("kube-apiserver")),
                _ => (vendored_etcd()?, dir.join("kube-apiserver")),
            },
            None => (
                vendored_etcd()?,
                match std::env::var_os("PORTICO_KUBE_APISERVER") {
                    Some(explicit) => PathBuf::from(explicit),
                    None => Built::KubeApiserver.cached_or_built()?,
                },
            ),
        };
        if !etcd.is_file() {
            return Err(ControlPlaneError::MissingEtcd(etcd));
        }
        if !kube_apiserver.is_file() {
            return Err(ControlPlaneError::MissingApiServer(kube_apiserver));
        }
        let controller = |component: Built| -> Result<PathBuf, ControlPlaneError> {
            if let Some(found) = assets
                .as_ref()
                .map(|dir| dir.join(component.name()))
                .filter(|p| p.is_file())
            {
                return Ok(found);
            }
            if let Some(dir) = &assets {
                tracing::warn!(
                    component = component.name(),
                    assets = %dir.display(),
                    "not in KUBEBUILDER_ASSETS (envtest ships only etcd and kube-apiserver): using Portico's build"
                );
            }
            component.cached_or_built()
        };
        let kwok = controller(Built::Kwok)?;
        Ok(Self {
            etcd,
            kube_apiserver,
            kube_controller_manager: controller(Built::KubeControllerManager)?,
            kube_scheduler: controller(Built::KubeScheduler)?,
            kwok_stages: match stages_of(&kwok) {
                beside if beside.is_file() => beside,
                _ => stages_of(&Built::Kwok.cached_or_built()?),
            },
            kwok,
        })
    }
}

/// The real node's programs built here (containerd, runc and the CNI plugins come
/// from Debian's packages).
#[derive(Debug, Clone)]
pub struct NodeBinaries {
    pub kubelet: PathBuf,
    pub kube_proxy: PathBuf,
    pub coredns: PathBuf,
    pub metrics_server: PathBuf,
}

impl NodeBinaries {
    pub fn locate() -> Result<Self, ControlPlaneError> {
        Ok(Self {
            kubelet: Built::Kubelet.cached_or_built()?,
            kube_proxy: Built::KubeProxy.cached_or_built()?,
            coredns: Built::CoreDns.cached_or_built()?,
            metrics_server: Built::MetricsServer.cached_or_built()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_the_pins() {
        assert!(pinned_kubernetes_version().starts_with("v1."));
        assert!(pinned_kwok_version().starts_with("v0."));
        assert!(pinned_coredns_version().starts_with("v1."));
        assert!(pinned_metrics_server_version().starts_with("v0."));
        assert_eq!(
            pinned("require (\n\tfoo v1.2.3 // indirect\n)", "foo"),
            "v1.2.3"
        );
        assert_eq!(minor_of("Kubernetes v1.32.13\n"), Some(32));
        assert_eq!(minor_of("Kubernetes v1.35.4"), Some(35));
        assert_eq!(minor_of("nothing"), None);
        assert_eq!(pinned("foobar v1\n", "foo"), "unknown");
    }
}
