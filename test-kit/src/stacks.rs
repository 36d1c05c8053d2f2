//! Driving the Stack reconciler in tests: one reconciler instance per test namespace,
//! Stacks created and edited as a person would, and waits on watches (never sleeps).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use portico_server::reconcile::catalog::{Catalog, LiveCatalog};
use portico_server::reconcile::controller::{ReconcileStats, Settings};
use portico_server::reconcile::leader::LeaseSettings;
use portico_server::reconcile::metrics::Metrics;
use portico_server::reconcile::run_elected;
use portico_server::reconcile::stack::Stack;
use serde_json::json;
use tokio::sync::watch;

/// How long a simulated node takes at most to turn a Stack Ready (and most waits).
pub const WAIT: Duration = Duration::from_secs(60);

/// One reconciler instance: scoped to `namespace`, electing through a Lease there.
pub struct Instance {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    stats: Arc<ReconcileStats>,
}

impl Instance {
    pub fn start(client: &kube::Client, namespace: &str, identity: &str) -> Self {
        Self::start_with(client, namespace, identity, Arc::default())
    }

    pub fn start_with(
        client: &kube::Client,
        namespace: &str,
        identity: &str,
        metrics: Arc<Metrics>,
    ) -> Self {
        let catalog = Catalog::load(None).expect("catalog");
        Self::start_with_catalog(client, namespace, identity, metrics, catalog)
    }

    /// A reconciler provisioning from `catalog` (the local cluster's, on a real node).
    pub fn start_with_catalog(
        client: &kube::Client,
        namespace: &str,
        identity: &str,
        metrics: Arc<Metrics>,
        catalog: Catalog,
    ) -> Self {
        let stats = Arc::new(ReconcileStats::default());
        let (stop, shutdown) = watch::channel(false);
        let mut lease = LeaseSettings::new(namespace, identity);
        // Long enough that a loaded machine never lets the follower take over by
        // expiry; a stopping leader releases it at once.
        lease.duration = Duration::from_secs(15);
        lease.retry = Duration::from_millis(500);
        let settings = Settings {
            catalog: LiveCatalog::fixed(catalog),
            namespace: Some(namespace.to_string()),
            stats: stats.clone(),
            metrics,
            concurrency: portico_server::reconcile::controller::CONCURRENCY,
        };
        let task = tokio::spawn(run_elected(client.clone(), settings, lease, shutdown));
        Self { stop, task, stats }
    }

    pub async fn shut_down(self) {
        self.stop.send_replace(true);
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the reconciler stops in time")
            .expect("the reconciler task ends cleanly");
    }

    pub fn reconciles(&self) -> u64 {
        self.stats.reconciles.load(Ordering::Relaxed)
    }
}

pub async fn create_stack(
    client: &kube::Client,
    ns: &str,
    name: &str,
    spec: serde_json::Value,
) -> Stack {
    let api: Api<Stack> = Api::namespaced(client.clone(), ns);
    let stack: Stack = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("stack");
    api.create(&PostParams::default(), &stack)
        .await
        .expect("create Stack")
}

/// Merge-patches Stack `name`'s spec with `spec`, as a person editing it would.
pub async fn edit_stack(client: &kube::Client, ns: &str, name: &str, spec: serde_json::Value) {
    Api::<Stack>::namespaced(client.clone(), ns)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": spec })),
        )
        .await
        .unwrap_or_else(|e| panic!("edit Stack {name}: {e}"));
}

/// Waits until `name` of kind K satisfies `condition` (a watch, not polling).
pub async fn until<K>(
    client: &kube::Client,
    ns: &str,
    name: &str,
    what: &str,
    condition: impl Fn(Option<&K>) -> bool,
) where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    until_within(client, ns, name, what, WAIT, condition).await;
}

/// [`until`], waiting at most `limit` (real containers take longer than simulated ones).
pub async fn until_within<K>(
    client: &kube::Client,
    ns: &str,
    name: &str,
    what: &str,
    limit: Duration,
    condition: impl Fn(Option<&K>) -> bool,
) where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    tokio::time::timeout(limit, await_condition(api, name, condition))
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
        .unwrap_or_else(|e| panic!("watching for {what}: {e}"));
}

/// Waits for the Stack to be Degraded and returns that condition.
pub async fn degraded(
    client: &kube::Client,
    ns: &str,
    name: &str,
) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    until::<Stack>(client, ns, name, "Degraded", |s| {
        phase(s) == Some("Degraded")
    })
    .await;
    let stack: Stack = Api::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("Stack");
    stack
        .status
        .expect("status")
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Degraded")
        .expect("Degraded")
}

pub fn phase(stack: Option<&Stack>) -> Option<&str> {
    stack
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.phase.as_deref())
}

/// Whether the Stack is Ready with `replicas` ready replicas (as its condition says).
pub fn ready_with(stack: Option<&Stack>, replicas: i32) -> bool {
    phase(stack) == Some("Ready")
        && stack.and_then(|s| s.status.as_ref()).is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == "Ready"
                    && c.message == format!("{replicas} of {replicas} replicas ready")
            })
        })
}

/// The Pods of Stack `name`, by its label.
pub async fn pods_of(client: &kube::Client, ns: &str, name: &str) -> Vec<Pod> {
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&ListParams::default().labels(&format!("portico.dev/stack={name}")))
        .await
        .expect("list Pods")
        .items
}

/// Waits until the objects of kind K with `labels` in `ns` satisfy `condition` (a watch
/// through a reflector, checked after every event once listed).
pub async fn until_listed<K>(
    client: &kube::Client,
    ns: &str,
    labels: &str,
    what: &str,
    condition: impl Fn(&[Arc<K>]) -> bool,
) where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let (store, writer) = reflector::store();
    let events = reflector(
        writer,
        watcher(api, watcher::Config::default().labels(labels)),
    )
    .default_backoff();
    let settled = async {
        let mut events = std::pin::pin!(events);
        let mut listed = false;
        while let Some(event) = futures::StreamExt::next(&mut events).await {
            listed |= matches!(event, Ok(watcher::Event::InitDone));
            if listed && condition(&store.state()) {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, settled)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
}

/// Waits until Stack `name` has exactly `count` Pods, all Running and none going away.
pub async fn until_pods(client: &kube::Client, ns: &str, name: &str, count: usize) {
    let running = |p: &Arc<Pod>| {
        p.metadata.deletion_timestamp.is_none()
            && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
    };
    until_listed::<Pod>(
        client,
        ns,
        &format!("portico.dev/stack={name}"),
        &format!("{count} running Pods of {name}"),
        |pods| pods.len() == count && pods.iter().all(running),
    )
    .await;
}

pub fn controlled_by(obj: &impl Resource, stack: &Stack) -> bool {
    obj.meta().owner_references.iter().flatten().any(|o| {
        o.controller == Some(true)
            && o.kind == "Stack"
            && Some(&o.uid) == stack.metadata.uid.as_ref()
    })
}

/// Feeds `(name, object)` of every K in `ns` matching `labels` to `note` until it says
/// done (a watch, not polling); returns when it did, or panics after `limit`.
pub async fn watch_until<K>(
    client: &kube::Client,
    ns: &str,
    labels: &str,
    limit: Duration,
    mut note: impl FnMut(Arc<K>) -> bool,
) where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let mut events = watcher(
        api,
        watcher::Config::default().labels(labels).any_semantic(),
    )
    .default_backoff()
    .applied_objects()
    .boxed();
    let done = async {
        while let Some(Ok(object)) = events.next().await {
            if note(Arc::new(object)) {
                return;
            }
        }
    };
    tokio::time::timeout(limit, done)
        .await
        .expect("finished before the deadline");
}

/// The usual start of a Stack test: an admin client on the cluster with the Stack CRD,
/// a fresh namespace, and one reconciler scoped to it.
pub async fn one_reconciler(prefix: &str) -> (kube::Client, String, Instance) {
    let client = super::admin_with_stack_crd().await;
    let ns = super::fresh_namespace(&client, prefix).await;
    let reconciler = Instance::start(&client, &ns, "only-one");
    (client, ns, reconciler)
}
