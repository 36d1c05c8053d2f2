//! The registry of kinds: every resource the cluster serves, known in one place. CRDs
//! come from a reflector over CustomResourceDefinitions (schemas, printer columns,
//! served versions); everything else (Kubernetes' own kinds and aggregated APIs) from
//! aggregated discovery, two requests, refreshed now and then. Pages, writes, owner
//! links and the children view all ask here instead of calling discovery themselves.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition,
};
use portico_core::payload::{CrdSummary, CrdVersion, FormSpec};
use portico_core::resource::{KindFlags, ResourceKind, ResourceRef};

use super::crd_read::ReadCrd;
use kube::Api;
use kube::core::discovery::v2::APIGroupDiscoveryList;
use kube::runtime::{WatchStreamExt, reflector, watcher};

/// How often built-in kinds are discovered again (aggregated APIs come and go).
const REDISCOVER_EVERY: Duration = Duration::from_secs(300);
/// How long after a CRD change discovery is asked again (changes in between join it).
const REDISCOVER_SETTLE: Duration = Duration::from_secs(1);
/// How soon a failed discovery is tried again.
const RETRY_DISCOVERY: Duration = Duration::from_secs(2);

/// Built-in kinds whose objects commonly own others: the object page looks for
/// children under these (and under every CRD, whose controllers are unknown).
const BUILTIN_OWNERS: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
    ("", "services"),
];

/// Built-in kinds controllers commonly create as children; with every namespaced CRD
/// they are where the children view looks. Bounded on purpose: each is a live feed.
const BUILTIN_CHILDREN: &[(&str, &str)] = &[
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "replicasets"),
    ("", "pods"),
    ("", "services"),
    ("", "secrets"),
    ("", "configmaps"),
    ("", "persistentvolumeclaims"),
    ("batch", "jobs"),
];

/// A kind to look for children in: where, and its kind name for the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildKind {
    pub resource: ResourceRef,
    pub kind: String,
}

/// The column the API server serves for a CRD version without printer columns
/// (apiextensions-apiserver's `serveDefaultColumnsIfEmpty`): the creation time.
const DEFAULT_AGE_COLUMN: &str = "Age";

/// A shared, cheaply cloned view of every kind the cluster serves.
#[derive(Clone)]
pub struct KindRegistry {
    crds: reflector::Store<ReadCrd>,
    builtins: Arc<RwLock<Vec<ResourceKind>>>,
    /// Portico's own Stack kind, `(group, plural)`, flagged for the pages.
    stack: (String, String),
    // The store's own readiness signal wakes only one of several concurrent waiters,
    // so readiness is re-published on a watch channel that wakes them all.
    loaded: tokio::sync::watch::Receiver<bool>,
    /// Bumped on every change to the set of kinds.
    changes: tokio::sync::watch::Receiver<u64>,
    /// Whether the CRD watch's last word from the API server was good (readiness).
    watching: tokio::sync::watch::Receiver<bool>,
}

impl KindRegistry {
    /// Starts watching CRDs and discovering built-in kinds, flagging `stack`
    /// (`group`, `plural`) as Portico's Stack kind. The returned future drives both;
    /// spawn it.
    pub fn start(
        client: kube::Client,
        stack: (&str, &str),
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (reader, writer) = reflector::store();
        let (loaded_tx, loaded) = tokio::sync::watch::channel(false);
        let (changes_tx, changes) = tokio::sync::watch::channel(0u64);
        let (watching_tx, watching) = tokio::sync::watch::channel(false);
        let builtins: Arc<RwLock<Vec<ResourceKind>>> = Arc::default();
        // Decoded one by one, so one hostile CRD cannot stop the rest from loading.
        let api: Api<ReadCrd> = Api::all(client.clone());
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer);
        let registry = Self {
            crds: reader.clone(),
            builtins: builtins.clone(),
            stack: (stack.0.to_string(), stack.1.to_string()),
            loaded,
            changes,
            watching,
        };
        let driver = async move {
            let (discovered_tx, mut discovered) = tokio::sync::watch::channel(false);
            // A changed CRD changes what discovery lists: look again soon, so a CRD's
            // versions and the built-in kinds are never compared across minutes.
            let crds_changed = tokio::sync::Notify::new();
            let mark_loaded = async {
                let crds = reader.wait_until_ready().await.is_ok();
                let kinds = discovered.wait_for(|done| *done).await.is_ok();
                if crds && kinds {
                    loaded_tx.send_replace(true);
                    tracing::info!(crds = reader.len(), "kind registry loaded");
                }
            };
            let drive = stream.for_each(|event| {
                watching_tx
                    .send_if_modified(|ok| std::mem::replace(ok, event.is_ok()) != event.is_ok());
                match event {
                    Ok(
                        watcher::Event::Apply(_)
                        | watcher::Event::Delete(_)
                        | watcher::Event::InitDone,
                    ) => {
                        changes_tx.send_modify(|v| *v += 1);
                        crds_changed.notify_one();
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "CRD watch interrupted; retrying with backoff");
                    }
                }
                futures::future::ready(())
            });
            let discover =
                discover_forever(client, builtins, &changes_tx, discovered_tx, &crds_changed);
            futures::join!(mark_loaded, drive, discover);
        };
        (registry, driver)
    }

    /// A receiver that wakes on every change to the set of kinds.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.clone()
    }

    /// Whether the CRDs and the built-in kinds have both been read once.
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Whether the kinds were read once and the CRD watch is receiving: readiness,
    /// answered without asking the API server (a probe costs nothing upstream).
    pub fn is_current(&self) -> bool {
        self.is_loaded() && *self.watching.borrow()
    }

    /// Waits up to `timeout` for the first read.
    pub async fn wait_loaded(&self, timeout: Duration) -> bool {
        let mut loaded = self.loaded.clone();
        tokio::time::timeout(timeout, loaded.wait_for(|done| *done))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Every CRD, sorted by group then kind; one Portico cannot use says why.
    pub fn crds(&self) -> Vec<CrdSummary> {
        let builtins = self.builtins();
        let mut out: Vec<CrdSummary> = self
            .crds
            .state()
            .iter()
            .map(|c| {
                let mut summary = summarize(&c.crd);
                summary.problem = if yields_to_builtin(&c.crd, &builtins) {
                    Some(format!(
                        "Kubernetes itself serves {}.{}: Portico shows the built-in kind and ignores this definition.",
                        summary.plural, summary.group
                    ))
                } else {
                    c.unreadable.clone()
                };
                summary
            })
            .collect();
        out.sort_by(|a, b| (&a.group, &a.kind).cmp(&(&b.group, &b.kind)));
        out
    }

    /// Every kind that can be listed: established CRDs with a served version, then the
    /// built-in kinds a CRD does not stand in for. A CRD naming a kind Kubernetes
    /// serves itself stands in for nothing (see [`yields_to_builtin`]).
    pub fn kinds(&self) -> Vec<ResourceKind> {
        let builtins = self.builtins();
        let mut kinds: Vec<ResourceKind> = self
            .served_crds(&builtins)
            .iter()
            .map(|c| (summarize(&c.crd), has_status_conditions(&c.crd)))
            .filter(|(c, _)| c.established)
            .map(|(c, readiness)| {
                let mut kind = self.crd_kind(c);
                kind.flags.readiness = readiness;
                kind
            })
            .filter(|k| !k.versions.is_empty())
            .collect();
        let from_crds: Vec<(String, String)> = kinds
            .iter()
            .map(|k| (k.group.clone(), k.plural.clone()))
            .collect();
        kinds.extend(
            builtins
                .into_iter()
                .filter(|b| !from_crds.contains(&(b.group.clone(), b.plural.clone()))),
        );
        kinds
    }

    fn builtins(&self) -> Vec<ResourceKind> {
        self.builtins
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The CRDs the API server serves objects of (all but those yielding to a
    /// built-in kind).
    fn served_crds(&self, builtins: &[ResourceKind]) -> Vec<Arc<ReadCrd>> {
        self.crds
            .state()
            .into_iter()
            .filter(|c| !yields_to_builtin(&c.crd, builtins))
            .collect()
    }

    /// The kind served as `group`/`plural`, if any.
    pub fn lookup(&self, group: &str, plural: &str) -> Option<ResourceKind> {
        self.kinds()
            .into_iter()
            .find(|k| k.group == group && k.plural == plural)
    }

    /// The kind named `kind` in `group` served at `version`, if any (an object's
    /// apiVersion and kind, or an owner reference, resolved to a resource).
    pub fn resolve(&self, group: &str, version: &str, kind: &str) -> Option<ResourceKind> {
        self.kinds()
            .into_iter()
            .find(|k| k.group == group && k.kind == kind && k.versions.iter().any(|v| v == version))
    }

    /// What a create form needs for one served version of a CRD.
    pub fn form_spec(&self, group: &str, plural: &str, version: &str) -> Option<FormSpec> {
        let read = self.crd(group, plural)?;
        let crd = &read.crd;
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

    /// A CRD version's additionalPrinterColumns (`None` for built-in kinds, whose
    /// columns only the API server's Table conversion knows).
    pub fn printer_columns(
        &self,
        group: &str,
        plural: &str,
        version: &str,
    ) -> Option<Vec<CustomResourceColumnDefinition>> {
        let read = self.crd(group, plural)?;
        let v = read.crd.spec.versions.iter().find(|v| v.name == version)?;
        Some(v.additional_printer_columns.clone().unwrap_or_default())
    }

    /// The names of a CRD version's date columns that print the creation time (their
    /// JSONPath is `.metadata.creationTimestamp`); `None` for built-in kinds. A version
    /// without printer columns is served with the API server's own "Age" (type date,
    /// the field's documentation as its description), as kubectl shows it.
    pub fn creation_age_columns(
        &self,
        group: &str,
        plural: &str,
        version: &str,
    ) -> Option<Vec<String>> {
        let columns = self.printer_columns(group, plural, version)?;
        if columns.is_empty() {
            return Some(vec![DEFAULT_AGE_COLUMN.to_string()]);
        }
        Some(
            columns
                .into_iter()
                .filter(|c| c.type_ == "date" && c.json_path == ".metadata.creationTimestamp")
                .map(|c| c.name)
                .collect(),
        )
    }

    /// Where the children view of an object in `owner_group` looks: the built-in
    /// kinds controllers commonly create, then namespaced CRDs, those nearest the
    /// owner first (its own group, then groups under the same domain), at most `max`
    /// kinds in all, each at its preferred version. The bound keeps a cluster with
    /// hundreds of CRDs from making every children view exceed a person's feeds.
    pub fn child_kinds(&self, owner_group: &str, max: usize) -> Vec<ChildKind> {
        let mut kinds: Vec<ResourceKind> = self
            .kinds()
            .into_iter()
            .filter(|k| k.namespaced)
            .filter(|k| {
                !k.flags.builtin
                    || BUILTIN_CHILDREN.contains(&(k.group.as_str(), k.plural.as_str()))
            })
            .collect();
        kinds.sort_by_cached_key(|k| {
            let nearness = if k.flags.builtin {
                0
            } else if k.group == owner_group {
                1
            } else if domain(&k.group) == domain(owner_group) {
                2
            } else {
                3
            };
            (nearness, k.group.clone(), k.plural.clone())
        });
        kinds.truncate(max);
        kinds
            .into_iter()
            .map(|k| ChildKind {
                resource: k.resource(None),
                kind: k.kind,
            })
            .collect()
    }

    fn crd(&self, group: &str, plural: &str) -> Option<Arc<ReadCrd>> {
        let found = self
            .crds
            .find(|c| c.crd.spec.group == group && c.crd.spec.names.plural == plural)?;
        (!yields_to_builtin(&found.crd, &self.builtins())).then_some(found)
    }

    fn crd_kind(&self, c: CrdSummary) -> ResourceKind {
        let is_stack = c.group == self.stack.0 && c.plural == self.stack.1;
        ResourceKind {
            versions: c.served_versions().map(|v| v.name.clone()).collect(),
            namespaced: c.scope == "Namespaced",
            group: c.group,
            kind: c.kind,
            plural: c.plural,
            short_names: c.short_names,
            flags: KindFlags {
                builtin: false,
                is_stack,
                can_own: true,
                readiness: false,
            },
        }
    }
}

/// Whether a served version's schema has `status.conditions`: its objects can say
/// whether they are Ready.
fn has_status_conditions(crd: &CustomResourceDefinition) -> bool {
    crd.spec.versions.iter().filter(|v| v.served).any(|v| {
        v.schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| {
                s.properties
                    .as_ref()?
                    .get("status")?
                    .properties
                    .as_ref()?
                    .get("conditions")
            })
            .is_some()
    })
}

/// A group's last two labels (`acme.io` of `db.acme.io`): operators commonly put
/// the kinds they create in sibling groups.
fn domain(group: &str) -> &str {
    let mut dots = group.rmatch_indices('.').map(|(at, _)| at);
    match (dots.next(), dots.next()) {
        (Some(_), Some(second)) => group.get(second + 1..).unwrap_or(group),
        _ => group,
    }
}

/// Groups Kubernetes serves itself. A CRD may be created in one (with the
/// `api-approved.kubernetes.io` annotation), but the API server keeps serving its own
/// kinds there, so such a CRD must not lend its columns or schema to them.
const KUBERNETES_GROUPS: &[&str] = &[
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "metrics.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// Whether something other than `crd` serves the objects it names: discovery lists
/// its group and plural, and either the group is one of Kubernetes' own or discovery
/// lists a version the CRD does not define (an aggregated API, or a built-in kind).
fn yields_to_builtin(crd: &CustomResourceDefinition, discovered: &[ResourceKind]) -> bool {
    let spec = &crd.spec;
    discovered
        .iter()
        .find(|k| k.group == spec.group && k.plural == spec.names.plural)
        .is_some_and(|k| {
            KUBERNETES_GROUPS.contains(&spec.group.as_str())
                || k.versions
                    .iter()
                    .any(|v| !spec.versions.iter().any(|c| &c.name == v))
        })
}

/// Discovers built-in kinds now, then every [`REDISCOVER_EVERY`] and soon after a CRD
/// changes; retries soon after a failure. Publishes a change when the set differs.
async fn discover_forever(
    client: kube::Client,
    builtins: Arc<RwLock<Vec<ResourceKind>>>,
    changes: &tokio::sync::watch::Sender<u64>,
    discovered: tokio::sync::watch::Sender<bool>,
    crds_changed: &tokio::sync::Notify,
) {
    loop {
        let pause = match discover(&client).await {
            Ok(found) => {
                let mut current = builtins.write().unwrap_or_else(|p| p.into_inner());
                if *current != found {
                    tracing::info!(kinds = found.len(), "built-in kinds discovered");
                    *current = found;
                    changes.send_modify(|v| *v += 1);
                }
                discovered.send_replace(true);
                REDISCOVER_EVERY
            }
            Err(error) => {
                tracing::warn!(%error, "discovering built-in kinds failed; retrying");
                RETRY_DISCOVERY
            }
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = crds_changed.notified() => {
                // A burst of CRD changes (an operator installing dozens) is one look.
                tokio::time::sleep(REDISCOVER_SETTLE).await;
            }
        }
    }
}

/// Every listable kind from aggregated discovery (`/api` and `/apis`, two requests),
/// each with the versions serving it, the group's preferred version first.
async fn discover(client: &kube::Client) -> Result<Vec<ResourceKind>, kube::Error> {
    let (core, groups) = futures::try_join!(
        client.list_core_api_versions_aggregated(),
        client.list_api_groups_aggregated()
    )?;
    Ok(builtin_kinds([core, groups]))
}

/// The kinds an aggregated discovery answer lists (only those that can be listed and
/// watched: the rest, like TokenReviews, are not tables).
fn builtin_kinds(lists: [APIGroupDiscoveryList; 2]) -> Vec<ResourceKind> {
    let mut by_resource: HashMap<(String, String), ResourceKind> = HashMap::new();
    let mut order = Vec::new();
    for group in lists.into_iter().flat_map(|l| l.items) {
        let name = group
            .metadata
            .as_ref()
            .and_then(|m| m.name.clone())
            .unwrap_or_default();
        // Versions come in the group's order of preference.
        for version in group.versions {
            let Some(v) = version.version else { continue };
            for r in version.resources {
                let (Some(plural), Some(kind)) = (r.resource, r.response_kind.and_then(|k| k.kind))
                else {
                    continue;
                };
                let listable = ["list", "watch"]
                    .iter()
                    .all(|verb| r.verbs.iter().any(|have| have == verb));
                if !listable {
                    continue;
                }
                let key = (name.clone(), plural.clone());
                if let Some(known) = by_resource.get_mut(&key) {
                    known.versions.push(v.clone());
                    continue;
                }
                order.push(key.clone());
                let can_own = BUILTIN_OWNERS.contains(&(name.as_str(), plural.as_str()));
                let readiness = portico_core::readiness::BUILTIN_READINESS
                    .contains(&(name.as_str(), plural.as_str()));
                by_resource.insert(
                    key,
                    ResourceKind {
                        group: name.clone(),
                        kind,
                        plural,
                        short_names: r.short_names,
                        namespaced: r.scope.as_deref() == Some("Namespaced"),
                        versions: vec![v.clone()],
                        flags: KindFlags {
                            builtin: true,
                            is_stack: false,
                            can_own,
                            readiness,
                        },
                    },
                );
            }
        }
    }
    order
        .into_iter()
        .filter_map(|key| by_resource.remove(&key))
        .collect()
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
        problem: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_lists_listable_kinds_with_every_serving_version_preferred_first() {
        let apis: APIGroupDiscoveryList = serde_json::from_value(serde_json::json!({
            "items": [{
                "metadata": {"name": "autoscaling"},
                "versions": [
                    {"version": "v2", "resources": [
                        {"resource": "horizontalpodautoscalers", "scope": "Namespaced",
                         "responseKind": {"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"},
                         "shortNames": ["hpa"], "verbs": ["create", "get", "list", "watch"]}
                    ]},
                    {"version": "v1", "resources": [
                        {"resource": "horizontalpodautoscalers", "scope": "Namespaced",
                         "responseKind": {"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"},
                         "verbs": ["list", "watch"]}
                    ]}
                ]
            }, {
                "metadata": {"name": "authentication.k8s.io"},
                "versions": [{"version": "v1", "resources": [
                    {"resource": "tokenreviews", "scope": "Cluster",
                     "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenReview"},
                     "verbs": ["create"]}
                ]}]
            }]
        }))
        .expect("discovery list");
        let core: APIGroupDiscoveryList = serde_json::from_value(serde_json::json!({
            "items": [{"versions": [{"version": "v1", "resources": [
                {"resource": "services", "scope": "Namespaced",
                 "responseKind": {"group": "", "version": "v1", "kind": "Service"},
                 "shortNames": ["svc"], "verbs": ["list", "watch", "get"]}
            ]}]}]
        }))
        .expect("core list");
        let kinds = builtin_kinds([core, apis]);
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        let svc = &kinds[0];
        assert_eq!((svc.group.as_str(), svc.kind.as_str()), ("", "Service"));
        assert!(svc.flags.builtin && svc.flags.can_own && svc.namespaced);
        let hpa = &kinds[1];
        assert_eq!(hpa.versions, ["v2", "v1"]);
        assert_eq!(hpa.short_names, ["hpa"]);
        assert!(!hpa.flags.can_own);
    }

    fn crd(group: &str, plural: &str, versions: &[&str]) -> CustomResourceDefinition {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": plural, "kind": "K"},
                "versions": versions.iter().map(|v| serde_json::json!({"name": v, "served": true, "storage": true})).collect::<Vec<_>>()}
        }))
        .expect("crd")
    }

    fn discovered(group: &str, plural: &str, versions: &[&str]) -> ResourceKind {
        ResourceKind {
            group: group.into(),
            kind: "K".into(),
            plural: plural.into(),
            short_names: vec![],
            namespaced: true,
            versions: versions.iter().map(|v| v.to_string()).collect(),
            flags: KindFlags::default(),
        }
    }

    #[test]
    fn a_crd_naming_a_kubernetes_kind_yields_to_it_even_at_the_same_version() {
        let ingresses = [discovered("networking.k8s.io", "ingresses", &["v1"])];
        assert!(yields_to_builtin(
            &crd("networking.k8s.io", "ingresses", &["v1"]),
            &ingresses
        ));
        // An approved CRD in a Kubernetes-run group that names no built-in kind.
        assert!(!yields_to_builtin(
            &crd("gateway.networking.k8s.io", "gateways", &["v1"]),
            &[discovered("gateway.networking.k8s.io", "gateways", &["v1"])]
        ));
        // Elsewhere, a version served by something else (an aggregated API).
        let metrics = [discovered("custom.example.com", "things", &["v1", "v2"])];
        assert!(yields_to_builtin(
            &crd("custom.example.com", "things", &["v2"]),
            &metrics
        ));
        assert!(!yields_to_builtin(
            &crd("custom.example.com", "things", &["v1", "v2"]),
            &metrics
        ));
        // Not yet discovered: a new CRD is what serves its kind.
        assert!(!yields_to_builtin(&crd("acme.io", "widgets", &["v1"]), &[]));
    }

    #[test]
    fn a_groups_domain_is_its_last_two_labels() {
        assert_eq!(domain("db.acme.io"), "acme.io");
        assert_eq!(domain("acme.io"), "acme.io");
        assert_eq!(domain("apps"), "apps");
        assert_eq!(domain(""), "");
    }
}
