//! Resource usage for a page, read as the person from the metrics API
//! (`metrics.k8s.io`, metrics-server) beside the requests and limits of the Pods, or
//! the node's allocatable amounts. metrics-server keeps only its latest figures: the
//! page asks again and keeps the last minutes itself.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Container, Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube_quantity::ParsedQuantity;
use portico_core::usage::{
    Amounts, TABLE_ROWS, Usage, UsageReport, UsageRow, UsageTarget, WORKLOAD_ROWS,
};
use serde_json::Value;

use crate::cluster::error::{ApiError, Failure};

const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";

/// Usage reads one person may have running at once: a table's may hold every Pod's
/// figures of the cluster (metrics-server answers whole lists) until it is cut.
pub const PER_PERSON: usize = 2;
/// Usage reads running at once, everyone's.
pub const OVERALL: usize = 32;

/// Counts the usage reads running, by person.
#[derive(Debug, Default)]
pub struct UsageGate {
    open: std::sync::Mutex<HashMap<String, usize>>,
}

/// One read let through; it counts until dropped.
pub struct UsagePass<'a> {
    gate: &'a UsageGate,
    who: String,
}

impl UsageGate {
    /// A pass for `who`, or `None` past [`PER_PERSON`] or [`OVERALL`].
    pub fn enter(&self, who: &str) -> Option<UsagePass<'_>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let everyone: usize = open.values().sum();
        let theirs = open.get(who).copied().unwrap_or(0);
        if theirs >= PER_PERSON || everyone >= OVERALL {
            return None;
        }
        *open.entry(who.to_string()).or_default() += 1;
        Some(UsagePass {
            gate: self,
            who: who.to_string(),
        })
    }
}

impl Drop for UsagePass<'_> {
    fn drop(&mut self) {
        let mut open = self.gate.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.who) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.who);
            }
        }
    }
}

/// Why a target's usage could not be read: the object itself (say, a Pod that is
/// gone), or the metrics API (maybe not served at all).
enum Failed {
    Target(ApiError),
    Metrics(ApiError),
}

impl From<kube::Error> for Failed {
    fn from(e: kube::Error) -> Self {
        Failed::Metrics(e.into())
    }
}

fn target_error(e: kube::Error) -> Failed {
    Failed::Target(e.into())
}

/// What `target` uses now, or why the cluster cannot say.
pub async fn usage(client: &kube::Client, target: &UsageTarget) -> Result<Usage, ApiError> {
    let measured = match target {
        UsageTarget::Pod { namespace, name } => pod(client, namespace, name).await,
        UsageTarget::Node { name } => node(client, name).await,
        UsageTarget::Workload {
            namespace,
            selector,
        } => workload(client, namespace, selector).await,
        UsageTarget::Table { namespace } => table(client, namespace.as_deref()).await,
    };
    match measured {
        Ok(Some(report)) => Ok(Usage::Measured(report)),
        // Nothing measured: the object is new, or the cluster serves no metrics.
        Ok(None) => match served(client).await? {
            Some(why) => Ok(Usage::NotServed(why)),
            None => Ok(Usage::Measured(UsageReport {
                missing: vec![NOT_YET.into()],
                ..UsageReport::default()
            })),
        },
        Err(Failed::Metrics(e))
            if matches!(e.failure(), Failure::NotFound | Failure::Unavailable) =>
        {
            match served(client).await? {
                Some(why) => Ok(Usage::NotServed(why)),
                None => Err(e),
            }
        }
        Err(Failed::Metrics(e) | Failed::Target(e)) => Err(e),
    }
}

const NOT_YET: &str = "No figures yet: metrics-server measures running containers only, every 15 to 60 seconds, a new one from its second measurement.";

/// `None` when the cluster serves the metrics API; else why not, in a sentence.
async fn served(client: &kube::Client) -> Result<Option<String>, ApiError> {
    match client.list_api_group_resources(GROUP_VERSION).await {
        Ok(_) => Ok(None),
        Err(e) => {
            let e = ApiError::from(e);
            match e.failure() {
                Failure::NotFound => Ok(Some(
                    "This cluster serves no metrics API (metrics.k8s.io), so there are no CPU or memory figures: installing metrics-server provides them.".into(),
                )),
                // An answer (503: registered, but its backend is down), not a
                // connection failure, which says nothing about the metrics API.
                Failure::Unavailable if e.rejection().is_some() => Ok(Some(format!(
                    "The cluster's metrics API (metrics.k8s.io) does not answer now ({e}), so there are no CPU or memory figures."
                ))),
                _ => Err(e),
            }
        }
    }
}

fn metrics_api(client: &kube::Client, namespace: Option<&str>, kind: &str) -> Api<DynamicObject> {
    let (group, version) = GROUP_VERSION.split_once('/').unwrap_or_default();
    let resource = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: GROUP_VERSION.into(),
        kind: kind.into(),
        plural: if kind == "NodeMetrics" {
            "nodes"
        } else {
            "pods"
        }
        .into(),
    };
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

async fn pod(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<UsageReport>, Failed> {
    let spec = Api::<Pod>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .map_err(target_error)?
        .spec
        .unwrap_or_default();
    let Some(metrics) = metrics_api(client, Some(namespace), "PodMetrics")
        .get_opt(name)
        .await?
    else {
        return Ok(None);
    };
    // Every container measured (sidecars among the init containers too), in the
    // Pod's order; one of its containers not measured is said, not shown as zero.
    let used = container_usage(&metrics.data);
    let mut report = UsageReport {
        measured_at: timestamp(&metrics.data),
        ..UsageReport::default()
    };
    let declared = (spec.init_containers.iter().flatten()).chain(spec.containers.iter());
    for c in declared {
        match used.get(&c.name) {
            Some(&(cpu, memory)) => {
                let (cpu, memory) = amounts(std::slice::from_ref(c), cpu, memory);
                report.rows.push(UsageRow {
                    name: c.name.clone(),
                    cpu,
                    memory,
                });
            }
            None if spec.containers.iter().any(|main| main.name == c.name) => {
                report.missing.push(format!("{}: {NOT_YET}", c.name));
            }
            None => {}
        }
    }
    Ok(Some(report))
}

async fn node(client: &kube::Client, name: &str) -> Result<Option<UsageReport>, Failed> {
    let Some(metrics) = metrics_api(client, None, "NodeMetrics")
        .get_opt(name)
        .await?
    else {
        return Ok(None);
    };
    // Someone who may read the node's metrics but not the node sees usage alone.
    let allocatable = match Api::<Node>::all(client.clone())
        .get(name)
        .await
        .map_err(ApiError::from)
    {
        Ok(node) => node.status.and_then(|s| s.allocatable).unwrap_or_default(),
        Err(e) if e.failure() == Failure::Forbidden => BTreeMap::new(),
        Err(e) => return Err(Failed::Target(e)),
    };
    let usage = metrics.data.get("usage");
    let ceiling = |resource: &str, parse: fn(&str) -> Option<u64>| {
        allocatable.get(resource).and_then(|q| parse(&q.0))
    };
    Ok(Some(UsageReport {
        rows: vec![UsageRow {
            name: name.to_string(),
            cpu: Amounts {
                used: quantity(usage, "cpu", millicores),
                request: None,
                ceiling: ceiling("cpu", millicores),
            },
            memory: Amounts {
                used: quantity(usage, "memory", bytes),
                request: None,
                ceiling: ceiling("memory", bytes),
            },
        }],
        measured_at: timestamp(&metrics.data),
        ..UsageReport::default()
    }))
}

async fn workload(
    client: &kube::Client,
    namespace: &str,
    selector: &str,
) -> Result<Option<UsageReport>, Failed> {
    let params = ListParams::default()
        .labels(selector)
        .limit(WORKLOAD_ROWS as u32);
    let pods = Api::<Pod>::namespaced(client.clone(), namespace)
        .list(&params)
        .await
        .map_err(target_error)?;
    let metrics = metrics_api(client, Some(namespace), "PodMetrics")
        .list(&ListParams::default().labels(selector))
        .await?;
    let mut used: BTreeMap<String, (u64, u64, Option<String>)> = BTreeMap::new();
    for m in &metrics.items {
        let (cpu, memory) = container_usage(&m.data)
            .values()
            .fold((0u64, 0u64), |(c, m), (cpu, mem)| {
                (c.saturating_add(*cpu), m.saturating_add(*mem))
            });
        let name = m.metadata.name.clone().unwrap_or_default();
        used.insert(name, (cpu, memory, timestamp(&m.data)));
    }
    let mut report = UsageReport {
        truncated: pods
            .metadata
            .continue_
            .as_deref()
            .is_some_and(|c| !c.is_empty()),
        ..UsageReport::default()
    };
    for p in &pods.items {
        let name = p.metadata.name.clone().unwrap_or_default();
        let Some((cpu, memory, at)) = used.get(&name) else {
            report.missing.push(format!("{name}: {NOT_YET}"));
            continue;
        };
        let containers = p.spec.as_ref().map_or(&[][..], |s| &s.containers[..]);
        let (cpu, memory) = amounts(containers, *cpu, *memory);
        report.measured_at = report.measured_at.max(at.clone());
        report.rows.push(UsageRow { name, cpu, memory });
    }
    Ok(Some(report))
}

async fn table(
    client: &kube::Client,
    namespace: Option<&str>,
) -> Result<Option<UsageReport>, Failed> {
    let metrics = metrics_api(client, namespace, "PodMetrics")
        .list(&ListParams::default().limit(TABLE_ROWS as u32))
        .await?;
    // metrics-server answers whole lists, `limit` or not: the bound is applied here.
    let mut report = UsageReport {
        truncated: metrics.items.len() > TABLE_ROWS
            || metrics
                .metadata
                .continue_
                .as_deref()
                .is_some_and(|c| !c.is_empty()),
        ..UsageReport::default()
    };
    for m in metrics.items.iter().take(TABLE_ROWS) {
        let (cpu, memory) = container_usage(&m.data)
            .values()
            .fold((0u64, 0u64), |(c, m), (cpu, mem)| {
                (c.saturating_add(*cpu), m.saturating_add(*mem))
            });
        let name = format!(
            "{}/{}",
            m.metadata.namespace.as_deref().unwrap_or_default(),
            m.metadata.name.as_deref().unwrap_or_default()
        );
        report.measured_at = report.measured_at.max(timestamp(&m.data));
        report.rows.push(UsageRow {
            name,
            cpu: Amounts {
                used: cpu,
                ..Amounts::default()
            },
            memory: Amounts {
                used: memory,
                ..Amounts::default()
            },
        });
    }
    Ok(Some(report))
}

/// A PodMetrics' containers: name → (millicores, bytes).
fn container_usage(data: &Value) -> BTreeMap<String, (u64, u64)> {
    (data
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|c| {
        let usage = c.get("usage");
        Some((
            c.get("name")?.as_str()?.to_string(),
            (
                quantity(usage, "cpu", millicores),
                quantity(usage, "memory", bytes),
            ),
        ))
    })
    .collect()
}

/// The containers' requests and limits summed, beside the usage. A sum stands only
/// where every container sets the amount: one without a limit has no ceiling.
fn amounts(containers: &[Container], cpu: u64, memory: u64) -> (Amounts, Amounts) {
    let sum = |pick: fn(&Container) -> Option<&BTreeMap<String, Quantity>>,
               resource: &str,
               parse: fn(&str) -> Option<u64>| {
        containers
            .iter()
            .map(|c| {
                pick(c)
                    .and_then(|m| m.get(resource))
                    .and_then(|q| parse(&q.0))
            })
            .try_fold(0u64, |sum, amount| amount.map(|a| sum.saturating_add(a)))
            .filter(|_| !containers.is_empty())
    };
    fn requests(c: &Container) -> Option<&BTreeMap<String, Quantity>> {
        c.resources.as_ref()?.requests.as_ref()
    }
    fn limits(c: &Container) -> Option<&BTreeMap<String, Quantity>> {
        c.resources.as_ref()?.limits.as_ref()
    }
    (
        Amounts {
            used: cpu,
            request: sum(requests, "cpu", millicores),
            ceiling: sum(limits, "cpu", millicores),
        },
        Amounts {
            used: memory,
            request: sum(requests, "memory", bytes),
            ceiling: sum(limits, "memory", bytes),
        },
    )
}

fn quantity(usage: Option<&Value>, resource: &str, parse: fn(&str) -> Option<u64>) -> u64 {
    usage
        .and_then(|u| u.get(resource))
        .and_then(Value::as_str)
        .and_then(parse)
        .unwrap_or(0)
}

fn timestamp(data: &Value) -> Option<String> {
    data.get("timestamp")?.as_str().map(str::to_string)
}

/// A CPU quantity (`1500m`, `2`, `1000234n`) in millicores.
fn millicores(text: &str) -> Option<u64> {
    let cores = ParsedQuantity::try_from(text).ok()?.to_bytes_f64()?;
    // Rounded up, as kubectl top prints it (a quantity's MilliValue).
    (cores.is_finite() && cores >= 0.0).then(|| (cores * 1000.0).ceil() as u64)
}

/// A memory quantity (`12Mi`, `1G`, `2048Ki`) in bytes.
fn bytes(text: &str) -> Option<u64> {
    let value = ParsedQuantity::try_from(text).ok()?.to_bytes_f64()?;
    (value.is_finite() && value >= 0.0).then(|| value.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_person_gets_two_reads_at_once_and_a_pass_given_back_is_free_again() {
        let gate = UsageGate::default();
        let first = gate.enter("ada").expect("first");
        let _second = gate.enter("ada").expect("second");
        assert!(gate.enter("ada").is_none(), "a third at once");
        assert!(gate.enter("bob").is_some(), "another person's own");
        drop(first);
        assert!(gate.enter("ada").is_some(), "given back");
        let everyone: Vec<_> = (0..OVERALL)
            .map_while(|i| gate.enter(&format!("p{i}")))
            .collect();
        assert_eq!(everyone.len(), OVERALL - 1, "ada's one still counts");
        assert!(gate.enter("zoe").is_none());
    }

    #[test]
    fn quantities_read_as_the_api_writes_them() {
        assert_eq!(millicores("1000234n"), Some(2));
        assert_eq!(millicores("1000000n"), Some(1));
        assert_eq!(millicores("998765432n"), Some(999));
        assert_eq!(millicores("1500m"), Some(1500));
        assert_eq!(millicores("2"), Some(2000));
        assert_eq!(bytes("2048Ki"), Some(2 * 1024 * 1024));
        assert_eq!(bytes("1G"), Some(1_000_000_000));
        assert_eq!(millicores("lots"), None);
        assert_eq!(bytes("-1Mi"), None);
    }

    #[test]
    fn a_pods_containers_are_read_and_bad_figures_count_as_none() {
        let data = json!({"containers": [
            {"name": "db", "usage": {"cpu": "250m", "memory": "64Mi"}},
            {"name": "odd", "usage": {"cpu": 7, "memory": "many"}},
            {"usage": {"cpu": "1"}},
        ]});
        let read = container_usage(&data);
        assert_eq!(read.get("db"), Some(&(250, 64 * 1024 * 1024)));
        assert_eq!(read.get("odd"), Some(&(0, 0)));
        assert_eq!(read.len(), 2);
        assert!(container_usage(&json!({"containers": "no"})).is_empty());
    }

    #[test]
    fn a_sum_stands_only_where_every_container_sets_it() {
        let container = |requests: Value, limits: Value| -> Container {
            serde_json::from_value(json!({
                "name": "c",
                "resources": {"requests": requests, "limits": limits},
            }))
            .expect("a container")
        };
        let both = [
            container(json!({"cpu": "100m", "memory": "1Mi"}), json!({"cpu": "1"})),
            container(json!({"cpu": "200m"}), json!({"cpu": "500m"})),
        ];
        let (cpu, memory) = amounts(&both, 10, 20);
        assert_eq!(cpu.request, Some(300));
        assert_eq!(cpu.ceiling, Some(1500));
        assert_eq!(memory.request, None, "the second sets no memory request");
        assert_eq!(memory.ceiling, None);
        assert_eq!((cpu.used, memory.used), (10, 20));
        assert_eq!(amounts(&[], 1, 1).0.request, None);
    }
}
