//! The home page's answer to "what is mine and what is wrong": the person's Stacks and
//! bindings, Warning events grouped by object, Pods not ready or restarting,
//! workloads short of their replicas, and the latest changes. Read from the same
//! `kubectl get` rows every live table shows ([`summarize`]); the server follows the
//! lists, the page draws the result.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::portico_kinds;
use crate::resource::{ResourceRef, is_path_segment};
use crate::table::wire::{Column, Row};

/// Which namespaces the home page looks in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct OverviewQuery {
    /// `None`: every namespace the person may read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl OverviewQuery {
    pub fn is_valid(&self) -> bool {
        self.namespace.as_deref().is_none_or(is_path_segment)
    }
}

/// Items one section shows; the rest are counted (`Section::more`).
pub const MAX_ITEMS: usize = 50;
/// Warnings shown under one object, newest first.
pub const MAX_WARNINGS_PER_OBJECT: usize = 5;
/// Recent changes shown.
pub const MAX_CHANGES: usize = 15;

/// The lists the home page follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Watched {
    Stack,
    Binding,
    Warning,
    Pod,
    Deployment,
    StatefulSet,
    DaemonSet,
}

impl Watched {
    pub const ALL: [Watched; 7] = [
        Watched::Stack,
        Watched::Binding,
        Watched::Warning,
        Watched::Pod,
        Watched::Deployment,
        Watched::StatefulSet,
        Watched::DaemonSet,
    ];

    pub fn resource(self) -> ResourceRef {
        match self {
            Watched::Stack => portico_kinds::stacks(),
            Watched::Binding => portico_kinds::bindings(),
            Watched::Warning => ResourceRef::new("", "v1", "events"),
            Watched::Pod => ResourceRef::new("", "v1", "pods"),
            Watched::Deployment => ResourceRef::new("apps", "v1", "deployments"),
            Watched::StatefulSet => ResourceRef::new("apps", "v1", "statefulsets"),
            Watched::DaemonSet => ResourceRef::new("apps", "v1", "daemonsets"),
        }
    }

    /// Only Warning events are followed: the API server filters the rest out.
    pub fn field_selector(self) -> Option<&'static str> {
        (self == Watched::Warning).then_some("type=Warning")
    }

    pub fn kind(self) -> &'static str {
        match self {
            Watched::Stack => portico_kinds::STACK_KIND,
            Watched::Binding => portico_kinds::BINDING_KIND,
            Watched::Warning => "Event",
            Watched::Pod => "Pod",
            Watched::Deployment => "Deployment",
            Watched::StatefulSet => "StatefulSet",
            Watched::DaemonSet => "DaemonSet",
        }
    }

    /// As a sentence names them: "Portico may not show you Pods in team-b".
    pub fn spoken(self) -> &'static str {
        match self {
            Watched::Stack => "Stacks",
            Watched::Binding => "bindings",
            Watched::Warning => "events",
            Watched::Pod => "Pods",
            Watched::Deployment => "Deployments",
            Watched::StatefulSet => "StatefulSets",
            Watched::DaemonSet => "DaemonSets",
        }
    }

    /// Whose latest changes are worth a person's glance: not Pods (their status
    /// changes all day) nor events.
    fn changes_count(self) -> bool {
        !matches!(self, Watched::Pod | Watched::Warning)
    }
}

/// What the home page shows.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Overview {
    pub stacks: Section,
    pub bindings: Section,
    pub warnings: Vec<WarningGroup>,
    /// Objects with warnings beyond those shown.
    pub warnings_more: usize,
    pub pods: Section,
    pub workloads: Section,
    pub changes: Section,
    /// How many Pods and workloads were looked at ("2 of 5,000 Pods").
    pub pods_seen: usize,
    pub workloads_seen: usize,
    /// What the person may not see, one sentence each (the rest is shown anyway).
    pub unseen: Vec<String>,
    /// Whether every list is whole yet (a large one still arriving says so).
    pub complete: bool,
}

/// Up to [`MAX_ITEMS`] items, and how many more there were.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Section {
    pub items: Vec<Item>,
    pub more: usize,
}

impl Section {
    fn of(mut items: Vec<Item>, max: usize) -> Self {
        let more = items.len().saturating_sub(max);
        items.truncate(max);
        Self { items, more }
    }
}

/// One object and what is to be said about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    /// Its page (without the site's base path).
    pub href: Option<String>,
    /// What is wrong, or its state: "CrashLoopBackOff · 0/1 ready · 4 restarts".
    pub state: String,
    pub problem: bool,
    /// RFC 3339: when it last changed (recent changes), else when it was created.
    pub at: Option<String>,
}

/// The Warning events of one object, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarningGroup {
    /// What the events name (`pod`, lower case as kubectl prints it) and its page.
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
    pub href: Option<String>,
    /// RFC 3339: the newest of its events.
    pub last: Option<String>,
    pub warnings: Vec<Warning>,
    /// Its warnings beyond those shown.
    pub more: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    pub reason: String,
    pub message: String,
    /// How often it happened (kubectl's Count), 1 when not said.
    pub count: u64,
    pub at: Option<String>,
}

/// One list the home page follows: its rows (the namespaces of one kind together).
pub struct Followed<'a> {
    pub watched: Watched,
    pub columns: &'a [Column],
    pub rows: Vec<&'a Row>,
}

/// The resource of a kind an event names (`pod`, `node`), and whether it is
/// namespaced.
pub type Resolve<'a> = &'a dyn Fn(&str) -> Option<(ResourceRef, bool)>;

/// The home page from the lists; `resolve` finds the resource of a kind an event
/// names, for its link.
pub fn summarize(followed: &[Followed<'_>], resolve: Resolve<'_>) -> Overview {
    let mut overview = Overview {
        complete: true,
        ..Overview::default()
    };
    let (mut stacks, mut bindings, mut pods, mut workloads, mut changes) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut events = vec![];
    for list in followed {
        let read = Reader::new(list.columns);
        for &row in &list.rows {
            if row.deleting {
                continue;
            }
            let item = |state: String, problem: bool| Item {
                kind: list.watched.kind().into(),
                namespace: row.namespace.clone(),
                name: row.name.clone(),
                href: Some(
                    list.watched
                        .resource()
                        .object_path(row.namespace.as_deref(), &row.name),
                ),
                state,
                problem,
                at: row.created.clone(),
            };
            if list.watched.changes_count()
                && let Some(changed) = &row.changed
            {
                let mut change = item(String::new(), false);
                change.state = match &row.created {
                    Some(created) if created == changed => "created".into(),
                    _ => "changed".into(),
                };
                change.at = Some(changed.clone());
                changes.push(change);
            }
            match list.watched {
                Watched::Stack => {
                    let phase = read.text(row, "Phase");
                    let problem = phase != "Ready";
                    let state = if phase.is_empty() {
                        "Waiting for the reconciler".to_string()
                    } else {
                        phase
                    };
                    stacks.push(item(state, problem));
                }
                Watched::Binding => {
                    let ready = read.text(row, "Ready");
                    let workload = read.text(row, "Workload");
                    let stack = read.text(row, "Stack");
                    let problem = ready != "True";
                    let state = format!(
                        "{stack} → {workload}{}",
                        if problem { " · not ready" } else { "" }
                    );
                    bindings.push(item(state, problem));
                }
                Watched::Pod => {
                    overview.pods_seen += 1;
                    if let Some(state) = pod_trouble(&read, row) {
                        pods.push(item(state, true));
                    }
                }
                Watched::Deployment | Watched::StatefulSet | Watched::DaemonSet => {
                    overview.workloads_seen += 1;
                    if let Some(state) = short_of_replicas(&read, list.watched, row) {
                        workloads.push(item(state, true));
                    }
                }
                Watched::Warning => events.push((read.clone(), row)),
            }
        }
    }
    let by_place = |a: &Item, b: &Item| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name));
    stacks.sort_by(|a, b| b.problem.cmp(&a.problem).then(by_place(a, b)));
    bindings.sort_by(|a, b| b.problem.cmp(&a.problem).then(by_place(a, b)));
    pods.sort_by(by_place);
    workloads.sort_by(by_place);
    // RFC 3339 times of one form: their text sorts as they do.
    changes.sort_by(|a, b| b.at.cmp(&a.at).then(by_place(a, b)));
    overview.stacks = Section::of(stacks, MAX_ITEMS);
    overview.bindings = Section::of(bindings, MAX_ITEMS);
    overview.pods = Section::of(pods, MAX_ITEMS);
    overview.workloads = Section::of(workloads, MAX_ITEMS);
    overview.changes = Section::of(changes, MAX_CHANGES);
    let groups = warning_groups(&events, resolve);
    overview.warnings_more = groups.len().saturating_sub(MAX_ITEMS);
    overview.warnings = groups.into_iter().take(MAX_ITEMS).collect();
    overview
}

/// What is wrong with a Pod, if anything: not all its containers ready (and not
/// finished), or a status that says a container is failing. Its restarts are said
/// as a count: the cell's "(2m ago)" is as of the row's last change, and would
/// grow stale on a page that stays open.
fn pod_trouble(read: &Reader<'_>, row: &Row) -> Option<String> {
    let status = read.text(row, "Status");
    let ready = read.text(row, "Ready");
    let finished = matches!(status.as_str(), "Completed" | "Succeeded");
    let short = fraction(&ready).is_some_and(|(have, want)| have < want);
    if finished || !(short || FAILING.contains(&status.as_str())) {
        return None;
    }
    let mut said = vec![status];
    if short {
        said.push(format!("{ready} ready"));
    }
    let restarts = restarts_of(&read.text(row, "Restarts"));
    if restarts > 0 {
        let times = if restarts == 1 { "restart" } else { "restarts" };
        said.push(format!("{restarts} {times}"));
    }
    Some(said.join(" · "))
}

/// Statuses kubectl prints for a Pod whose container is failing, ready or not.
const FAILING: [&str; 8] = [
    "CrashLoopBackOff",
    "Error",
    "OOMKilled",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// A workload short of its replicas: what it has of what it wants.
fn short_of_replicas(read: &Reader<'_>, watched: Watched, row: &Row) -> Option<String> {
    let (have, want) = match watched {
        Watched::DaemonSet => (
            read.text(row, "Ready").parse::<u64>().ok()?,
            read.text(row, "Desired").parse::<u64>().ok()?,
        ),
        _ => fraction(&read.text(row, "Ready"))?,
    };
    (have != want).then(|| format!("{have} of {want} ready"))
}

/// `"2/3"` as (2, 3).
fn fraction(text: &str) -> Option<(u64, u64)> {
    let (have, want) = text.split_once('/')?;
    Some((have.trim().parse().ok()?, want.trim().parse().ok()?))
}

/// kubectl's restarts cell (`4`, or `4 (2m ago)`): the count.
fn restarts_of(text: &str) -> u64 {
    text.split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The longest event message shown: a stack trace in an event stays a line or two.
const MAX_MESSAGE: usize = 512;

fn shortened(message: String) -> String {
    crate::table::format::shortened(message, MAX_MESSAGE)
}

/// The events grouped by the object they name, the group with the newest first.
fn warning_groups(events: &[(Reader<'_>, &Row)], resolve: Resolve<'_>) -> Vec<WarningGroup> {
    // By (namespace, object).
    let mut groups: HashMap<(Option<String>, String), Vec<Warning>> = HashMap::new();
    for (read, row) in events {
        let object = read.text(row, "Object");
        let warning = Warning {
            reason: read.text(row, "Reason"),
            message: shortened(read.text(row, "Message")),
            count: read.text(row, "Count").parse().unwrap_or(1),
            at: row.changed.clone().or_else(|| row.created.clone()),
        };
        groups
            .entry((row.namespace.clone(), object))
            .or_default()
            .push(warning);
    }
    let mut groups: Vec<WarningGroup> = groups
        .into_iter()
        .map(|((namespace, object), mut warnings)| {
            warnings.sort_by(|a, b| b.at.cmp(&a.at));
            let (kind, name) = object
                .split_once('/')
                .map(|(k, n)| (k.to_string(), n.to_string()))
                .unwrap_or_else(|| (String::new(), object.clone()));
            // A Node's events are filed in a namespace; the Node has none.
            let href = resolve(&kind)
                .filter(|_| !name.is_empty())
                .map(|(resource, namespaced)| {
                    let at = namespace.as_deref().filter(|_| namespaced);
                    resource.object_path(at, &name)
                });
            let more = warnings.len().saturating_sub(MAX_WARNINGS_PER_OBJECT);
            WarningGroup {
                last: warnings.first().and_then(|w| w.at.clone()),
                kind,
                namespace,
                name,
                href,
                warnings: warnings.into_iter().take(MAX_WARNINGS_PER_OBJECT).collect(),
                more,
            }
        })
        .collect();
    groups.sort_by(|a, b| {
        b.last
            .cmp(&a.last)
            .then((&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)))
    });
    groups
}

/// Cells by column name, as the Table API names them ("Ready", "Restarts").
#[derive(Clone)]
struct Reader<'a> {
    columns: &'a [Column],
}

impl<'a> Reader<'a> {
    fn new(columns: &'a [Column]) -> Self {
        Self { columns }
    }

    fn text(&self, row: &Row, column: &str) -> String {
        let Some(i) = self
            .columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(column))
        else {
            return String::new();
        };
        match row.cells.get(i) {
            Some(serde_json::Value::String(text)) => text.clone(),
            Some(serde_json::Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(names: &[&str]) -> Vec<Column> {
        names
            .iter()
            .map(|name| Column {
                name: (*name).into(),
                kind: "string".into(),
                format: String::new(),
                description: String::new(),
                priority: 0,
                ..Default::default()
            })
            .collect()
    }

    fn row(namespace: &str, name: &str, cells: &[&str]) -> Row {
        Row {
            uid: format!("{namespace}/{name}"),
            name: name.into(),
            namespace: Some(namespace.into()),
            resource_version: "1".into(),
            created: Some("2026-11-28T09:00:00Z".into()),
            deleting: false,
            owners: vec![],
            cells: cells.iter().map(|c| serde_json::Value::from(*c)).collect(),
            changed: None,
        }
    }

    fn none(_: &str) -> Option<(ResourceRef, bool)> {
        None
    }

    #[test]
    fn pods_not_ready_or_failing_are_named_and_the_rest_counted() {
        let columns = columns(&["Name", "Ready", "Status", "Restarts", "Age"]);
        let rows = [
            row("a", "fine", &["fine", "1/1", "Running", "0", ""]),
            row(
                "a",
                "crash",
                &["crash", "0/1", "CrashLoopBackOff", "4 (2m3s ago)", ""],
            ),
            row(
                "a",
                "flapped",
                &["flapped", "1/1", "Running", "1 (40s ago)", ""],
            ),
            row(
                "a",
                "pulling",
                &["pulling", "1/2", "ImagePullBackOff", "0", ""],
            ),
            row("a", "oom", &["oom", "1/1", "OOMKilled", "3 (1s ago)", ""]),
            row("a", "done", &["done", "0/1", "Completed", "0", ""]),
        ];
        let followed = [Followed {
            watched: Watched::Pod,
            columns: &columns,
            rows: rows.iter().collect(),
        }];
        let overview = summarize(&followed, &none);
        assert_eq!(overview.pods_seen, 6);
        let said: Vec<(&str, &str)> = overview
            .pods
            .items
            .iter()
            .map(|i| (i.name.as_str(), i.state.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                ("crash", "CrashLoopBackOff · 0/1 ready · 4 restarts"),
                ("oom", "OOMKilled · 3 restarts"),
                ("pulling", "ImagePullBackOff · 1/2 ready"),
            ]
        );
        assert_eq!(
            overview.pods.items[0].href.as_deref(),
            Some("/r/core/v1/pods/a/crash")
        );
    }

    #[test]
    fn workloads_short_of_their_replicas_say_what_they_have_of_what_they_want() {
        let deployments = columns(&["Name", "Ready", "Up-to-date", "Available", "Age"]);
        let daemonsets = columns(&["Name", "Desired", "Current", "Ready", "Up-to-date"]);
        let d = [
            row("a", "web", &["web", "2/3", "3", "2", ""]),
            row("a", "api", &["api", "2/2", "2", "2", ""]),
        ];
        let ds = [row("a", "agent", &["agent", "3", "3", "1", "3"])];
        let followed = [
            Followed {
                watched: Watched::Deployment,
                columns: &deployments,
                rows: d.iter().collect(),
            },
            Followed {
                watched: Watched::DaemonSet,
                columns: &daemonsets,
                rows: ds.iter().collect(),
            },
        ];
        let overview = summarize(&followed, &none);
        assert_eq!(overview.workloads_seen, 3);
        let said: Vec<(&str, &str, &str)> = overview
            .workloads
            .items
            .iter()
            .map(|i| (i.kind.as_str(), i.name.as_str(), i.state.as_str()))
            .collect();
        assert_eq!(
            said,
            [
                ("DaemonSet", "agent", "1 of 3 ready"),
                ("Deployment", "web", "2 of 3 ready")
            ]
        );
    }

    #[test]
    fn warnings_are_grouped_by_object_newest_first_and_linked_to_its_page() {
        let columns = columns(&["Last Seen", "Type", "Reason", "Object", "Message", "Count"]);
        let mut older = row(
            "a",
            "e1",
            &[
                "",
                "Warning",
                "BackOff",
                "pod/web-1",
                "Back-off restarting",
                "7",
            ],
        );
        older.changed = Some("2026-11-28T09:01:00Z".into());
        let mut newer = row(
            "a",
            "e2",
            &[
                "",
                "Warning",
                "Unhealthy",
                "pod/web-1",
                "Readiness probe failed",
                "1",
            ],
        );
        newer.changed = Some("2026-11-28T09:05:00Z".into());
        let mut other = row(
            "a",
            "e3",
            &[
                "",
                "Warning",
                "FailedCreate",
                "replicaset/web-x",
                "quota",
                "",
            ],
        );
        other.changed = Some("2026-11-28T09:03:00Z".into());
        let long = "x".repeat(2000);
        let mut node = row(
            "default",
            "e4",
            &["", "Warning", "Rebooted", "node/n1", &long, ""],
        );
        node.changed = Some("2026-11-28T08:00:00Z".into());
        let followed = [Followed {
            watched: Watched::Warning,
            columns: &columns,
            rows: vec![&older, &other, &newer, &node],
        }];
        let resolve = |kind: &str| match kind {
            "pod" => Some((ResourceRef::new("", "v1", "pods"), true)),
            "node" => Some((ResourceRef::new("", "v1", "nodes"), false)),
            _ => None,
        };
        let overview = summarize(&followed, &resolve);
        let groups: Vec<(&str, Option<&str>, Vec<&str>)> = overview
            .warnings
            .iter()
            .map(|g| {
                (
                    g.name.as_str(),
                    g.href.as_deref(),
                    g.warnings.iter().map(|w| w.reason.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            groups,
            [
                (
                    "web-1",
                    Some("/r/core/v1/pods/a/web-1"),
                    vec!["Unhealthy", "BackOff"]
                ),
                ("web-x", None, vec!["FailedCreate"]),
                ("n1", Some("/r/core/v1/nodes/_/n1"), vec!["Rebooted"]),
            ]
        );
        assert_eq!(
            overview.warnings[2].warnings[0].message.len(),
            512 + '…'.len_utf8()
        );
        assert_eq!(overview.warnings[0].warnings[1].count, 7);
    }

    #[test]
    fn stacks_with_a_problem_come_first_and_changes_newest_first_without_pods() {
        let stacks = columns(&["Name", "Choice", "Phase"]);
        let pods = columns(&["Name", "Ready", "Status", "Restarts"]);
        let mut ready = row("a", "db", &["db", "mysql", "Ready"]);
        ready.changed = Some("2026-11-28T09:10:00Z".into());
        let mut degraded = row("b", "app", &["app", "tomcat", "Degraded"]);
        degraded.changed = Some("2026-11-28T09:00:00Z".into());
        let mut pod = row("a", "p", &["p", "1/1", "Running", "0"]);
        pod.changed = Some("2026-11-28T09:20:00Z".into());
        let followed = [
            Followed {
                watched: Watched::Stack,
                columns: &stacks,
                rows: vec![&ready, &degraded],
            },
            Followed {
                watched: Watched::Pod,
                columns: &pods,
                rows: vec![&pod],
            },
        ];
        let overview = summarize(&followed, &none);
        let stacks: Vec<(&str, bool)> = overview
            .stacks
            .items
            .iter()
            .map(|i| (i.name.as_str(), i.problem))
            .collect();
        assert_eq!(stacks, [("app", true), ("db", false)]);
        let changes: Vec<(&str, &str)> = overview
            .changes
            .items
            .iter()
            .map(|i| (i.name.as_str(), i.state.as_str()))
            .collect();
        assert_eq!(changes, [("db", "changed"), ("app", "created")]);
    }
}
