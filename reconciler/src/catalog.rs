//! What each Stack choice provisions (image, port, probes, environment), read from a
//! YAML file (in a cluster: a mounted ConfigMap) so that offering another choice or
//! version needs no code change. The built-in default is `deploy/catalog/stacks.yaml`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The catalog Portico ships with (official MySQL 8.4 and Tomcat 10.1 images).
pub const DEFAULT_CATALOG: &str = include_str!("../../deploy/catalog/stacks.yaml");

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read the stack catalog {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the stack catalog is not valid: {0}")]
    Parse(#[from] serde_yaml::Error),
    #[error("the stack catalog entry {0:?} has no image")]
    NoImage(String),
    #[error("the plan {plan:?} of {choice} is beyond its choice's ceilings: {why}")]
    PlanOverCeiling {
        choice: String,
        plan: String,
        why: Box<CeilingError>,
    },
    #[error("the default plan {plan:?} of {choice} is not one of its plans")]
    UnknownDefaultPlan { choice: String, plan: String },
}

/// A size a choice is offered in: what each instance requests and is limited to,
/// and the volume it gets. How many instances is the Stack's own `replicas`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Each instance's volume (stateful entries).
    #[serde(default)]
    pub storage: Option<String>,
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogEntry {
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// The image used when a Stack names no version.
    pub image: String,
    /// Version → image.
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    pub port: i32,
    #[serde(default = "default_port_name")]
    pub port_name: String,
    /// A StatefulSet with a volume per replica and a headless Service; otherwise a
    /// Deployment.
    #[serde(default)]
    pub stateful: bool,
    #[serde(default)]
    pub default_storage: Option<String>,
    /// The StorageClass of the volumes (stateful entries); none means the cluster's
    /// default class.
    #[serde(default)]
    pub storage_class: Option<String>,
    /// Where the workload mounts its volume (stateful entries).
    #[serde(default)]
    pub data_path: Option<String>,
    /// The user the generated password is for: the one apps connect as, shown with
    /// the connection details and handed over by bindings.
    #[serde(default)]
    pub user: Option<String>,
    /// The environment variable that names `user` to the image (`MYSQL_USER`): it
    /// creates the user at first start.
    #[serde(default)]
    pub user_env: Option<String>,
    /// The server's administrator, whose own generated password is kept apart from the
    /// user's: for people administering the server, never handed to an app.
    #[serde(default)]
    pub admin: Option<AdminSpec>,
    /// A command run in the container once it starts (a `postStart` hook), with the
    /// container's environment: it makes sure `user` exists with its password and
    /// rights, since an image sets up users only on empty data (a Stack made before
    /// it had a user, or whose user's password changed, gets it here).
    #[serde(default)]
    pub post_start: Option<Vec<String>>,
    /// The database the image creates at first start (shown with the connection
    /// details, and in a connection URL).
    #[serde(default)]
    pub database: Option<String>,
    /// The scheme of a connection URL to an instance (`mysql://`, `http://`).
    #[serde(default)]
    pub scheme: Option<String>,
    /// The environment variable that receives `user`'s generated password; entries
    /// without one get no credentials Secret.
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub readiness: Option<ProbeSpec>,
    #[serde(default)]
    pub liveness: Option<ProbeSpec>,
    /// The unprivileged user the image can run as (its processes then run as it, with
    /// its group owning the volume); an image that needs root at start names none.
    #[serde(default)]
    pub run_as_user: Option<i64>,
    /// The most one instance may request or be limited to, per resource; anything a
    /// Stack asks beyond it (or for another resource) is refused.
    #[serde(default = "default_ceiling")]
    pub max_resources: BTreeMap<String, String>,
    /// The largest volume one instance may ask for (stateful entries).
    #[serde(default = "default_max_storage")]
    pub max_storage: String,
    /// The most instances one Stack may run: each stateful one keeps a volume.
    #[serde(default = "default_max_replicas")]
    pub max_replicas: i32,
    /// What an instance requests and is limited to where its Stack says nothing, so no
    /// Pod runs unbounded.
    #[serde(default = "default_resources")]
    pub default_resources: DefaultResources,
    /// The sizes offered, smallest first; a Stack picks one with `spec.plan`, and its
    /// own `resources` and `storage` still win where it names them.
    #[serde(default)]
    pub plans: Vec<Plan>,
    /// The plan a Stack naming none gets; none means the catalog's defaults.
    #[serde(default)]
    pub default_plan: Option<String>,
    /// Whether a Stack may go back to an older version. A database's files, once
    /// upgraded, cannot be read by the older server: such an entry says `false`.
    #[serde(default = "yes")]
    pub allow_downgrade: bool,
}

fn yes() -> bool {
    true
}

/// Requests and limits given to a Stack's instances where it names none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefaultResources {
    #[serde(default)]
    pub requests: BTreeMap<String, String>,
    #[serde(default)]
    pub limits: BTreeMap<String, String>,
}

fn default_max_storage() -> String {
    "20Gi".into()
}

fn default_max_replicas() -> i32 {
    5
}

fn default_resources() -> DefaultResources {
    let map = |pairs: [(&str, &str); 2]| {
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    DefaultResources {
        requests: map([("cpu", "100m"), ("memory", "256Mi")]),
        limits: map([("cpu", "2"), ("memory", "2Gi")]),
    }
}

/// Resources a Stack may ask for: compute and scratch space, never extended
/// resources (`nvidia.com/gpu`) or anything a cluster charges separately.
pub const STACK_RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

fn default_ceiling() -> BTreeMap<String, String> {
    [
        ("cpu", "4"),
        ("memory", "8Gi"),
        ("ephemeral-storage", "20Gi"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Why a Stack's resources are refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CeilingError {
    #[error("{0} is not a resource a Stack may ask for (only cpu, memory and ephemeral-storage)")]
    NotAllowed(String),
    #[error("{kind} {resource}: {value} is not a quantity")]
    NotAQuantity {
        kind: &'static str,
        resource: String,
        value: String,
    },
    #[error("{asked} replicas are more than the catalog allows ({most})")]
    TooManyReplicas { asked: i32, most: i32 },
    #[error("{kind} {resource}: {value} is more than the catalog allows ({ceiling})")]
    OverCeiling {
        kind: &'static str,
        resource: String,
        value: String,
        ceiling: String,
    },
}

impl CatalogEntry {
    /// Checks how many instances a Stack asks for, and the volume of each, against
    /// this entry's ceilings.
    pub fn check_scale(&self, replicas: i32, storage: Option<&str>) -> Result<(), CeilingError> {
        use kube_quantity::ParsedQuantity;
        if replicas > self.max_replicas {
            return Err(CeilingError::TooManyReplicas {
                asked: replicas,
                most: self.max_replicas,
            });
        }
        let Some(asked) = storage else {
            return Ok(());
        };
        let parse = |kind: &'static str, text: &str| {
            ParsedQuantity::try_from(text).map_err(|_| CeilingError::NotAQuantity {
                kind,
                resource: "storage".into(),
                value: text.into(),
            })
        };
        if parse("spec", asked)? > parse("catalog maxStorage", &self.max_storage)? {
            return Err(CeilingError::OverCeiling {
                kind: "spec",
                resource: "storage".into(),
                value: asked.into(),
                ceiling: self.max_storage.clone(),
            });
        }
        Ok(())
    }

    /// The requests and limits an instance gets: what the Stack asked, and the
    /// catalog's defaults where it asked nothing. A default limit below what the Stack
    /// requests is raised to the request (a limit under a request is invalid).
    pub fn resources_for(
        &self,
        requests: &BTreeMap<String, serde_json::Value>,
        limits: &BTreeMap<String, serde_json::Value>,
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        self.resources_within(None, requests, limits)
    }

    /// As [`Self::resources_for`], with `plan`'s requests and limits as the defaults
    /// (the catalog's own where the plan names none).
    pub fn resources_within(
        &self,
        plan: Option<&Plan>,
        requests: &BTreeMap<String, serde_json::Value>,
        limits: &BTreeMap<String, serde_json::Value>,
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        use kube_quantity::ParsedQuantity;
        let mut defaults = self.default_resources.clone();
        if let Some(plan) = plan {
            defaults.requests.extend(plan.requests.clone());
            defaults.limits.extend(plan.limits.clone());
        }
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut requests: BTreeMap<String, String> =
            requests.iter().map(|(k, v)| (k.clone(), text(v))).collect();
        let mut limits: BTreeMap<String, String> =
            limits.iter().map(|(k, v)| (k.clone(), text(v))).collect();
        let asked_limits: Vec<String> = limits.keys().cloned().collect();
        for (resource, default) in &defaults.limits {
            let limit = match requests.get(resource) {
                Some(asked)
                    if ParsedQuantity::try_from(asked.as_str()).ok()
                        > ParsedQuantity::try_from(default.as_str()).ok() =>
                {
                    asked.clone()
                }
                _ => default.clone(),
            };
            limits.entry(resource.clone()).or_insert(limit);
        }
        for (resource, default) in &defaults.requests {
            // A limit the Stack set alone makes Kubernetes request as much: kept so.
            if requests.contains_key(resource) || asked_limits.contains(resource) {
                continue;
            }
            // Never above the limit it got (a request over its limit is invalid).
            let request = match limits.get(resource) {
                Some(limit)
                    if ParsedQuantity::try_from(limit.as_str()).ok()
                        < ParsedQuantity::try_from(default.as_str()).ok() =>
                {
                    limit.clone()
                }
                _ => default.clone(),
            };
            requests.insert(resource.clone(), request);
        }
        (requests, limits)
    }

    /// Checks a Stack's requests and limits against the allowed resources and this
    /// entry's ceilings.
    pub fn check_resources(
        &self,
        requests: &BTreeMap<String, serde_json::Value>,
        limits: &BTreeMap<String, serde_json::Value>,
    ) -> Result<(), CeilingError> {
        use kube_quantity::ParsedQuantity;
        // A catalog naming only some ceilings keeps the defaults for the rest.
        let defaults = default_ceiling();
        for (kind, map) in [("requests", requests), ("limits", limits)] {
            for (resource, value) in map {
                if !STACK_RESOURCES.contains(&resource.as_str()) {
                    return Err(CeilingError::NotAllowed(resource.clone()));
                }
                let text = match value {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let not_a_quantity = || CeilingError::NotAQuantity {
                    kind,
                    resource: resource.clone(),
                    value: text.clone(),
                };
                let asked =
                    ParsedQuantity::try_from(text.as_str()).map_err(|_| not_a_quantity())?;
                let Some(ceiling) = self
                    .max_resources
                    .get(resource)
                    .or_else(|| defaults.get(resource))
                else {
                    continue;
                };
                let most = ParsedQuantity::try_from(ceiling.as_str()).map_err(|_| {
                    CeilingError::NotAQuantity {
                        kind: "catalog maxResources",
                        resource: resource.clone(),
                        value: ceiling.clone(),
                    }
                })?;
                if asked > most {
                    return Err(CeilingError::OverCeiling {
                        kind,
                        resource: resource.clone(),
                        value: text,
                        ceiling: ceiling.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

fn default_port_name() -> String {
    "main".into()
}

/// The administrator of a choice's server (MySQL's root).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminSpec {
    pub user: String,
    /// The environment variable that receives the administrator's password.
    pub password_env: String,
}

/// One way of probing the container; `tcp` checks the main port.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeSpec {
    #[serde(default)]
    pub exec: Option<Vec<String>>,
    #[serde(default)]
    pub http_get: Option<String>,
    #[serde(default)]
    pub tcp: bool,
}

impl ProbeSpec {
    /// The probe in a few words, for a person reading why a Stack is not ready
    /// ("exec: mysqladmin ping -h 127.0.0.1 --silent", "HTTP GET /", "TCP connect").
    pub fn describe(&self) -> String {
        match (&self.exec, &self.http_get) {
            (Some(command), _) => format!("exec: {}", command.join(" ")),
            (None, Some(path)) => format!("HTTP GET {path}"),
            (None, None) => "TCP connect".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Catalog {
    pub entries: BTreeMap<String, CatalogEntry>,
}

impl CatalogEntry {
    /// The image for `version` (the default image when none is asked for), or `None`
    /// when the catalog does not offer that version.
    pub fn image_for(&self, version: Option<&str>) -> Option<&str> {
        match version {
            None | Some("") => Some(&self.image),
            Some(v) => self.versions.get(v).map(String::as_str),
        }
    }

    /// The version `image` is, as the catalog names it (the default image is whichever
    /// version names the same image).
    pub fn version_of(&self, image: &str) -> Option<&str> {
        self.versions
            .iter()
            .find(|(_, i)| i.as_str() == image)
            .map(|(v, _)| v.as_str())
    }

    /// The plan named `name`, the default plan when none is named, `None` when there
    /// is neither; `Err` with the plans offered when `name` is not one of them.
    pub fn plan(&self, name: Option<&str>) -> Result<Option<&Plan>, String> {
        match name
            .filter(|n| !n.is_empty())
            .or(self.default_plan.as_deref())
        {
            None => Ok(None),
            Some(wanted) => self
                .plans
                .iter()
                .find(|p| p.name == wanted)
                .map(Some)
                .ok_or_else(|| {
                    self.plans
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }),
        }
    }
}

/// Versions in order: numerically by their dot-separated parts (`8.0` < `8.4` <
/// `10.1` < `11.0`), text where a part is not a number.
pub fn version_order(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.split(['.', '-'])
            .map(|p| (p.parse::<u64>().unwrap_or(u64::MAX), p.to_string()))
            .collect()
    };
    parts(a).cmp(&parts(b))
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Self, CatalogError> {
        let entries: BTreeMap<String, CatalogEntry> = serde_yaml::from_str(text)?;
        if let Some((name, _)) = entries.iter().find(|(_, e)| e.image.is_empty()) {
            return Err(CatalogError::NoImage(name.clone()));
        }
        // A plan is an offer: one the ceilings would refuse is the catalog's mistake.
        for (choice, entry) in &entries {
            for plan in &entry.plans {
                let values = |map: &BTreeMap<String, String>| {
                    map.iter()
                        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                        .collect::<BTreeMap<_, _>>()
                };
                entry
                    .check_resources(&values(&plan.requests), &values(&plan.limits))
                    .and_then(|()| entry.check_scale(1, plan.storage.as_deref()))
                    .map_err(|why| CatalogError::PlanOverCeiling {
                        choice: choice.clone(),
                        plan: plan.name.clone(),
                        why: Box::new(why),
                    })?;
            }
            if let Some(plan) = &entry.default_plan
                && !entry.plans.iter().any(|p| &p.name == plan)
            {
                return Err(CatalogError::UnknownDefaultPlan {
                    choice: choice.clone(),
                    plan: plan.clone(),
                });
            }
        }
        Ok(Self { entries })
    }

    /// The catalog at `path`, or the built-in one.
    pub fn load(path: Option<&Path>) -> Result<Self, CatalogError> {
        match path {
            None => Self::parse(DEFAULT_CATALOG),
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| CatalogError::Read {
                    path: p.display().to_string(),
                    source,
                })?;
                Self::parse(&text)
            }
        }
    }

    pub fn get(&self, choice: &str) -> Option<&CatalogEntry> {
        self.entries.get(choice)
    }
}

/// The catalog as it is now: fixed, or followed from its file, which the kubelet
/// rewrites when the ConfigMap changes (a minute or so later).
#[derive(Clone)]
pub struct LiveCatalog(tokio::sync::watch::Receiver<std::sync::Arc<Catalog>>);

impl LiveCatalog {
    /// A catalog that never changes.
    pub fn fixed(catalog: Catalog) -> Self {
        Self(tokio::sync::watch::channel(std::sync::Arc::new(catalog)).1)
    }

    /// `first` (read from `path`), then whatever valid catalog `path` holds, checked
    /// every `every`. A file that no longer parses is logged and the last good
    /// catalog kept. Spawn the returned future.
    pub fn follow(
        path: std::path::PathBuf,
        first: Catalog,
        every: std::time::Duration,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (send, receive) = tokio::sync::watch::channel(std::sync::Arc::new(first));
        let task = async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if send.is_closed() {
                    return;
                }
                match Catalog::load(Some(&path)) {
                    Ok(catalog) => {
                        send.send_if_modified(|current| {
                            let changed = **current != catalog;
                            if changed {
                                tracing::info!(path = %path.display(), "the stack catalog changed; reloaded");
                                *current = std::sync::Arc::new(catalog);
                            }
                            changed
                        });
                    }
                    Err(error) => {
                        tracing::error!(%error, "the stack catalog no longer reads; keeping the last good one");
                    }
                }
            }
        };
        (Self(receive), task)
    }

    pub fn current(&self) -> std::sync::Arc<Catalog> {
        self.0.borrow().clone()
    }

    /// Yields once per change of the catalog.
    pub fn changes(&self) -> impl futures::Stream<Item = ()> + Send + 'static {
        let mut receive = self.0.clone();
        receive.mark_unchanged();
        futures::stream::unfold(receive, |mut r| async move {
            r.changed().await.ok()?;
            Some(((), r))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_and_storage_are_bounded_and_unset_resources_get_the_defaults() {
        let catalog = Catalog::load(None).expect("built-in catalog");
        let mysql = catalog.get("mysql").expect("mysql");
        assert!(mysql.check_scale(5, Some("20Gi")).is_ok());
        assert_eq!(
            mysql.check_scale(10, None),
            Err(CeilingError::TooManyReplicas { asked: 10, most: 5 })
        );
        let huge = mysql.check_scale(1, Some("999999Ti")).expect_err("refused");
        assert_eq!(
            huge.to_string(),
            "spec storage: 999999Ti is more than the catalog allows (20Gi)"
        );
        let none = BTreeMap::new();
        let (requests, limits) = mysql.resources_for(&none, &none);
        assert_eq!(requests["cpu"], "100m");
        assert_eq!(limits["memory"], "2Gi");
        // A big request lifts the default limit; a small limit lowers the default
        // request; a limit set alone is left to Kubernetes' own rule.
        let asked = |pairs: &[(&str, &str)]| -> BTreeMap<String, serde_json::Value> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
                .collect()
        };
        let (requests, limits) = mysql.resources_for(&asked(&[("memory", "4Gi")]), &none);
        assert_eq!(
            (requests["memory"].as_str(), limits["memory"].as_str()),
            ("4Gi", "4Gi")
        );
        let (requests, limits) = mysql.resources_for(&none, &asked(&[("cpu", "50m")]));
        assert_eq!(limits["cpu"], "50m");
        assert!(!requests.contains_key("cpu"));
        assert_eq!(requests["memory"], "256Mi");
    }

    #[test]
    fn stacks_may_ask_for_compute_up_to_the_ceiling_and_nothing_else() {
        let catalog = Catalog::load(None).expect("built-in catalog");
        let tomcat = catalog.get("tomcat").expect("tomcat");
        let map = |pairs: &[(&str, serde_json::Value)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        let none = BTreeMap::new();
        assert_eq!(
            tomcat.check_resources(
                &map(&[("cpu", "500m".into()), ("memory", "1Gi".into())]),
                &map(&[("cpu", 2.into())])
            ),
            Ok(())
        );
        assert!(matches!(
            tomcat.check_resources(&map(&[("nvidia.com/gpu", 8.into())]), &none),
            Err(CeilingError::NotAllowed(r)) if r == "nvidia.com/gpu"
        ));
        assert!(matches!(
            tomcat.check_resources(&none, &map(&[("memory", "64Gi".into())])),
            Err(CeilingError::OverCeiling { .. })
        ));
        assert!(matches!(
            tomcat.check_resources(&map(&[("cpu", "lots".into())]), &none),
            Err(CeilingError::NotAQuantity { .. })
        ));
    }

    #[test]
    fn the_default_catalog_offers_mysql_8_4_and_tomcat_10_1() {
        let catalog = Catalog::load(None).expect("default catalog");
        let mysql = catalog.get("mysql").expect("mysql");
        assert!(mysql.stateful);
        assert_eq!(mysql.image_for(None), Some("docker.io/library/mysql:8.4"));
        // Apps get their own user; root's password goes to the server only.
        assert_eq!(
            (mysql.user.as_deref(), mysql.password_env.as_deref()),
            (Some("app"), Some("MYSQL_PASSWORD"))
        );
        assert_eq!(
            mysql.admin.as_ref().map(|a| a.password_env.as_str()),
            Some("MYSQL_ROOT_PASSWORD")
        );
        let tomcat = catalog.get("tomcat").expect("tomcat");
        assert!(!tomcat.stateful);
        assert_eq!(
            tomcat.image_for(None),
            Some("docker.io/library/tomcat:10.1")
        );
        assert_eq!(tomcat.image_for(Some("9")), None);
    }

    #[test]
    fn a_catalog_entry_without_image_is_refused() {
        let err = Catalog::parse("x:\n  image: ''\n  port: 1\n").expect_err("no image");
        assert!(err.to_string().contains("\"x\""));
    }
}

#[cfg(test)]
mod reload_tests {
    use super::*;

    // Paused time: the 100 ms below lets the follower's 20 ms ticks all run, read the
    // broken file and ignore it, however busy the machine (not a real sleep).
    #[tokio::test(start_paused = true)]
    async fn a_changed_catalog_file_is_followed_and_a_broken_one_ignored() {
        use futures::StreamExt;
        let dir = std::env::temp_dir().join(format!("portico-catalog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("catalog.yaml");
        std::fs::write(&path, DEFAULT_CATALOG).expect("write");
        let first = Catalog::load(Some(&path)).expect("first");
        let (live, task) =
            LiveCatalog::follow(path.clone(), first, std::time::Duration::from_millis(20));
        let task = tokio::spawn(task);
        let mut changes = Box::pin(live.changes());
        std::fs::write(&path, "tomcat:\n  image: example/tomcat:11\n  port: 8080\n")
            .expect("rewrite");
        changes.next().await.expect("a change");
        assert_eq!(
            live.current().entries.keys().collect::<Vec<_>>(),
            ["tomcat"]
        );
        std::fs::write(&path, "tomcat: [not, an, entry").expect("break");
        std::fs::write(&path, "tomcat: [not, an, entry").expect("still broken");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(live.current().entries["tomcat"].image, "example/tomcat:11");
        task.abort();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
