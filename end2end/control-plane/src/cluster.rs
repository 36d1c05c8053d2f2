//! The cluster a test binary runs against: an existing one when KUBECONFIG is set
//! explicitly, otherwise one local cluster, with Portico's CRDs, shared by every test
//! in the binary.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::{ControlPlane, ControlPlaneError, Nodes, StartOptions, apply, kubeconfig};

/// Portico's own CRDs (`deploy/crds`), installed before the controllers start (see
/// [`ControlPlane::start_with`]).
pub fn portico_crds() -> Result<Vec<kube::api::DynamicObject>, ControlPlaneError> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds");
    let setup = |e: apply::ApplyError| ControlPlaneError::Setup {
        what: "reading deploy/crds",
        message: e.to_string(),
    };
    let mut objects = Vec::new();
    for file in apply::manifest_files(&dir).map_err(setup)? {
        objects.extend(apply::read_documents(&file).map_err(setup)?);
    }
    Ok(objects)
}

pub enum TestCluster {
    Local(Box<ControlPlane>),
    External(PathBuf),
}

impl TestCluster {
    /// The process-wide cluster, started on first use. Panics with the reason when
    /// no cluster can be had: a missing control plane must fail the suite, not skip it.
    pub fn shared() -> &'static TestCluster {
        static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
        CLUSTER.get_or_init(
            || match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
                Some(path) => TestCluster::External(PathBuf::from(path)),
                None => match portico_crds().and_then(ControlPlane::start_with) {
                    Ok(plane) => TestCluster::Local(Box::new(plane)),
                    // Tests cannot run without a cluster: stop them with the reason.
                    #[allow(clippy::panic)]
                    Err(e) => panic!("the local control plane could not start: {e}"),
                },
            },
        )
    }

    /// A cluster with one real node, where containers run, started on first use and
    /// shared by the binary's tests. With KUBECONFIG set, that cluster (it must have
    /// nodes that run the local catalog's images). Panics with the reason otherwise.
    pub fn shared_real() -> &'static TestCluster {
        static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
        CLUSTER.get_or_init(
            || match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
                Some(path) => TestCluster::External(PathBuf::from(path)),
                None => {
                    let started = portico_crds().and_then(|objects| {
                        ControlPlane::start_opts(StartOptions {
                            objects,
                            nodes: Nodes::Real,
                            ..StartOptions::default()
                        })
                    });
                    match started {
                        Ok(plane) => TestCluster::Local(Box::new(plane)),
                        // Tests cannot run without a cluster: stop them with the reason.
                        #[allow(clippy::panic)]
                        Err(e) => panic!("the local cluster with a real node could not start: {e}"),
                    }
                }
            },
        )
    }

    /// A kubeconfig with cluster-admin rights.
    pub fn admin_kubeconfig(&self) -> &Path {
        match self {
            TestCluster::Local(plane) => plane.admin_kubeconfig(),
            TestCluster::External(path) => path,
        }
    }

    /// A fresh admin client, bound to the calling test's runtime.
    pub async fn admin_client(&self) -> Result<kube::Client, ControlPlaneError> {
        kubeconfig::client_from(self.admin_kubeconfig()).await
    }

    /// The local control plane, for tests that need to act on it (restart, mint users).
    pub fn local(&self) -> Option<&ControlPlane> {
        match self {
            TestCluster::Local(plane) => Some(plane),
            TestCluster::External(_) => None,
        }
    }
}
