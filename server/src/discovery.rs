//! The CRD catalog: every CustomResourceDefinition, kept current by one watch.

use std::time::Duration;

use app::model::{CrdSummary, CrdVersion, FormSpec};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};

/// A shared, cheaply cloned view of the cluster's CRDs.
#[derive(Clone)]
pub struct CrdCatalog {
    store: reflector::Store<CustomResourceDefinition>,
    // The store's own readiness signal wakes only one of several concurrent waiters,
    // so readiness is re-published on a watch channel that wakes them all.
    loaded: tokio::sync::watch::Receiver<bool>,
    /// Bumped on every change to the set of CRDs.
    changes: tokio::sync::watch::Receiver<u64>,
}

impl CrdCatalog {
    /// Starts watching CRDs. The returned future drives the watch; spawn it.
    pub fn start(
        client: kube::Client,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (reader, writer) = reflector::store();
        let (loaded_tx, loaded) = tokio::sync::watch::channel(false);
        let (changes_tx, changes) = tokio::sync::watch::channel(0u64);
        let api: Api<CustomResourceDefinition> = Api::all(client);
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer);
        let catalog = Self {
            store: reader.clone(),
            loaded,
            changes,
        };
        let driver = async move {
            let mark_loaded = async {
                if reader.wait_until_ready().await.is_ok() {
                    loaded_tx.send_replace(true);
                    tracing::info!(crds = reader.len(), "CRD catalog loaded");
                }
            };
            let drive = stream.for_each(|event| {
                match event {
                    Ok(
                        watcher::Event::Apply(_)
                        | watcher::Event::Delete(_)
                        | watcher::Event::InitDone,
                    ) => {
                        changes_tx.send_modify(|v| *v += 1);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "CRD watch interrupted; retrying with backoff");
                    }
                }
                futures::future::ready(())
            });
            futures::join!(mark_loaded, drive);
        };
        (catalog, driver)
    }

    /// A receiver that wakes on every change to the catalog.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Whether the initial list has arrived.
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Waits up to `timeout` for the initial list.
    pub async fn wait_loaded(&self, timeout: Duration) -> bool {
        let mut loaded = self.loaded.clone();
        tokio::time::timeout(timeout, loaded.wait_for(|done| *done))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Every CRD, sorted by group then kind.
    pub fn summaries(&self) -> Vec<CrdSummary> {
        let mut out: Vec<CrdSummary> = self.store.state().iter().map(|c| summarize(c)).collect();
        out.sort_by(|a, b| (&a.group, &a.kind).cmp(&(&b.group, &b.kind)));
        out
    }

    /// What a create form needs for one served version of a CRD.
    pub fn form_spec(&self, group: &str, plural: &str, version: &str) -> Option<FormSpec> {
        let crds = self.store.state();
        let crd = crds
            .iter()
            .find(|c| c.spec.group == group && c.spec.names.plural == plural)?;
        let v = crd
            .spec
            .versions
            .iter()
            .find(|v| v.name == version && v.served)?;
        let schema = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(serde_json::Value::Null);
        Some(FormSpec {
            kind: crd.spec.names.kind.clone(),
            api_version: format!("{group}/{version}"),
            namespaced: crd.spec.scope == "Namespaced",
            schema,
            versions: summarize(crd)
                .served_versions()
                .map(|v| v.name.clone())
                .collect(),
        })
    }
}

/// The list view of one CRD.
pub fn summarize(crd: &CustomResourceDefinition) -> CrdSummary {
    let spec = &crd.spec;
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conds| {
            conds
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    CrdSummary {
        name: crd.metadata.name.clone().unwrap_or_default(),
        group: spec.group.clone(),
        kind: spec.names.kind.clone(),
        plural: spec.names.plural.clone(),
        short_names: spec.names.short_names.clone().unwrap_or_default(),
        scope: spec.scope.clone(),
        versions: spec
            .versions
            .iter()
            .map(|v| CrdVersion {
                name: v.name.clone(),
                served: v.served,
                storage: v.storage,
            })
            .collect(),
        established,
    }
}
