//! Persistent volumes on the real node: a directory of the node's for each claim of
//! the default StorageClass, as a `local` PersistentVolume pinned to the node (what
//! rancher's local-path-provisioner does in kind and k3s).
//!
//! kube-controller-manager's test-only hostPath provisioner cannot serve here: it makes
//! its directories under the host's /tmp (left behind by a killed run) with mode 0750
//! for root, so a database running as its own user cannot write them, and kubelet
//! applies no fsGroup to hostPath volumes. A `local` volume gets the Pod's fsGroup.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::thread::JoinHandle;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

use crate::{ControlPlaneError, io_err, kubeconfig};

/// The StorageClass provisioner name this provisioner answers to.
pub const PROVISIONER: &str = "portico.local/node-directory";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";

/// The default StorageClass of a cluster with a real node.
pub fn storage_class() -> Value {
    crate::nodes::storage_class_of(PROVISIONER)
}

/// The provisioner, on a thread of its own with its own runtime. Stops when dropped.
pub struct Provisioner {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Provisioner {
    pub fn start(
        admin_kubeconfig: PathBuf,
        node: String,
        volumes: PathBuf,
    ) -> Result<Self, ControlPlaneError> {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io_err("starting the volume provisioner's runtime"))?;
        let thread = std::thread::Builder::new()
            .name("portico-volumes".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let client = match kubeconfig::client_from(&admin_kubeconfig).await {
                        Ok(client) => client,
                        Err(e) => {
                            tracing::error!(error = %e, "the volume provisioner has no client");
                            return;
                        }
                    };
                    let work = Work {
                        client,
                        node,
                        volumes,
                    };
                    tokio::select! {
                        () = work.run() => {}
                        _ = stopped => {}
                    }
                });
            })
            .map_err(io_err("starting the volume provisioner"))?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Provisioner {
    fn drop(&mut self) {
        self.stop();
    }
}

enum Event {
    Claim(Box<PersistentVolumeClaim>),
    Volume(Box<PersistentVolume>),
}

struct Work {
    client: kube::Client,
    node: String,
    volumes: PathBuf,
}

impl Work {
    async fn run(&self) {
        let claims = watcher(
            Api::<PersistentVolumeClaim>::all(self.client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .applied_objects()
        .map(|r| r.map(|c| Event::Claim(Box::new(c))));
        let volumes = watcher(
            Api::<PersistentVolume>::all(self.client.clone()),
            watcher::Config::default(),
        )
        .default_backoff()
        .applied_objects()
        .map(|r| r.map(|v| Event::Volume(Box::new(v))));
        let mut events = std::pin::pin!(futures::stream::select(claims, volumes));
        while let Some(event) = events.next().await {
            let outcome = match event {
                Ok(Event::Claim(claim)) => self.provision(&claim).await,
                Ok(Event::Volume(volume)) => self.release(&volume).await,
                Err(e) => {
                    tracing::warn!(error = %e, "watching claims and volumes");
                    Ok(())
                }
            };
            if let Err(e) = outcome {
                tracing::warn!(error = %e, "provisioning a node volume");
            }
        }
    }

    /// A pending claim for this provisioner whose Pod the scheduler placed here gets
    /// a directory and a PersistentVolume bound to it.
    async fn provision(&self, claim: &PersistentVolumeClaim) -> Result<(), ProvisionError> {
        let annotations = claim.metadata.annotations.clone().unwrap_or_default();
        let ours = annotations.get(STORAGE_PROVISIONER).map(String::as_str) == Some(PROVISIONER);
        let here = annotations.get(SELECTED_NODE) == Some(&self.node);
        let pending = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending");
        let unbound = claim
            .spec
            .as_ref()
            .is_none_or(|s| s.volume_name.as_deref().unwrap_or_default().is_empty());
        if !(ours && here && pending && unbound) {
            return Ok(());
        }
        let (Some(uid), Some(name), Some(namespace), Some(spec)) = (
            claim.metadata.uid.as_deref(),
            claim.metadata.name.as_deref(),
            claim.metadata.namespace.as_deref(),
            claim.spec.as_ref(),
        ) else {
            return Ok(());
        };
        let volume_name = format!("pvc-{uid}");
        let path = self.volumes.join(&volume_name);
        std::fs::create_dir_all(&path)?;
        // kubelet gives the group to the Pod's fsGroup; a Pod without one (an image
        // running as a user of its own) must still be able to write.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777))?;
        let size = spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.clone())
            .unwrap_or_else(|| "1Gi".into());
        let volume: PersistentVolume = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": volume_name,
                "annotations": {PROVISIONED_BY: PROVISIONER},
            },
            "spec": {
                "capacity": {"storage": size},
                "accessModes": spec.access_modes.clone().unwrap_or_else(|| vec!["ReadWriteOnce".into()]),
                "persistentVolumeReclaimPolicy": "Delete",
                "storageClassName": spec.storage_class_name,
                "volumeMode": "Filesystem",
                "claimRef": {"namespace": namespace, "name": name, "uid": uid},
                "local": {"path": path},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In", "values": [self.node]},
                ]}]}},
            },
        }))?;
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api.create(&PostParams::default(), &volume).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// A volume of ours whose claim is gone: its directory and the object go.
    async fn release(&self, volume: &PersistentVolume) -> Result<(), ProvisionError> {
        let ours = volume
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(PROVISIONED_BY))
            .map(String::as_str)
            == Some(PROVISIONER);
        let released = volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Released");
        let Some(name) = volume.metadata.name.as_deref() else {
            return Ok(());
        };
        if !(ours && released) {
            return Ok(());
        }
        let path = self.volumes.join(name);
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum ProvisionError {
    #[error("the volume's directory: {0}")]
    Directory(#[from] std::io::Error),
    #[error("building the PersistentVolume: {0}")]
    Object(#[from] serde_json::Error),
    #[error("the API server: {0}")]
    Api(#[from] kube::Error),
}
