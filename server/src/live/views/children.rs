//! The objects a given uid owns, directly or through the objects it owns (a Stack →
//! its StatefulSet → its Pods), live.
//! It joins the hub's shared feeds of every kind a child can be (in the owner's
//! namespace) and sends the full, small list again whenever it changes.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::{Stream, StreamExt};
use portico_core::owner_tree::ChildEntry;
use portico_core::table::format::cell_text;
use portico_core::table::state::TableState;
use portico_core::table::wire::{Row, TableQuery};

use crate::cluster::registry::ChildKind;
use crate::live::budgets::limits::LimitRefused;
use crate::live::feeds::hub::WatchHub;
use crate::live::feeds::subscription::Subscription;
use portico_core::live::protocol::TableChange;

/// Who the children's feeds run for: the client they use, the identity that client
/// acts with (feeds are shared per identity) and the person they count against.
pub struct Viewer<'a> {
    pub client: &'a kube::Client,
    pub owner: Option<String>,
    pub person: Option<String>,
}

/// Debounce so a burst of changes (a rollout) is sent once.
const SETTLE: Duration = Duration::from_millis(50);

/// The live list of `uid`'s children in `namespace`, among `kinds`.
/// `viewer` is the client the feeds run as and the name of its identity.
pub fn children_stream(
    hub: &WatchHub,
    viewer: Viewer<'_>,
    kinds: Vec<ChildKind>,
    namespace: String,
    uid: String,
) -> Result<impl Stream<Item = Vec<ChildEntry>> + use<>, LimitRefused> {
    let feeds: Vec<(ChildKind, Subscription)> = kinds
        .into_iter()
        .map(|k| {
            let query = TableQuery {
                group: k.resource.group.clone(),
                version: k.resource.version.clone(),
                plural: k.resource.plural.clone(),
                namespace: Some(namespace.clone()),
                label_selector: None,
                field_selector: None,
                columns: None,
            };
            let sub = hub.subscribe_as(
                query,
                viewer.client,
                viewer.owner.clone(),
                viewer.person.clone(),
            )?;
            Ok((k, sub))
        })
        .collect::<Result<_, LimitRefused>>()?;
    let count = feeds.len();
    // One stream of (feed index, change) per kind, merged.
    let merged =
        futures::stream::select_all(feeds.into_iter().enumerate().map(|(i, (kind, sub))| {
            sub.into_stream()
                .map(move |update| (i, kind.clone(), update.change))
                .boxed()
        }));
    Ok(async_stream::stream! {
        let mut tables: Vec<Option<(ChildKind, TableState)>> = vec![None; count];
        let mut last: Option<Vec<ChildEntry>> = None;
        let mut merged = Box::pin(merged);
        while let Some((i, kind, change)) = merged.next().await {
            apply(&mut tables, i, kind, change);
            // Take whatever else is ready before recomputing.
            let settle = tokio::time::sleep(SETTLE);
            tokio::pin!(settle);
            loop {
                tokio::select! {
                    more = merged.next() => match more {
                        Some((i, kind, change)) => apply(&mut tables, i, kind, change),
                        None => break,
                    },
                    _ = &mut settle => break,
                }
            }
            let children = collect(&tables, &uid, &namespace);
            if last.as_ref() != Some(&children) {
                last = Some(children.clone());
                yield children;
            }
        }
    })
}

fn apply(
    tables: &mut [Option<(ChildKind, TableState)>],
    i: usize,
    kind: ChildKind,
    change: TableChange,
) {
    let Some(slot) = tables.get_mut(i) else {
        return;
    };
    match change {
        TableChange::Snapshot(snapshot) => {
            *slot = Some((kind, TableState::from_snapshot(snapshot)))
        }
        TableChange::Delta(delta) => {
            if let Some((_, state)) = slot.as_mut() {
                state.apply(delta);
            }
        }
        // A kind this viewer may not list simply contributes no children.
        TableChange::Problem(_) | TableChange::Ended(_) => *slot = None,
        // The owner tree takes whole tables (`Delivery::Whole`).
        TableChange::Partial(_) | TableChange::Rows { .. } => {}
    }
}

/// How deep the tree of descendants goes (Stack → StatefulSet → Pod is 2; a
/// Deployment's Pods are 3 below its owner), and how many entries it may hold: an
/// owner of thousands of objects gets the first ones, not a page that never loads.
const MAX_DEPTH: u8 = 4;
const MAX_ENTRIES: usize = 500;

/// Rows by the uid of each owner they name.
type Owned<'a> = HashMap<&'a str, Vec<(&'a ChildKind, &'a TableState, &'a Row)>>;

/// The descendants of `uid` among the feeds' rows, in tree order: each owner's
/// children sorted by kind and name, each followed by its own.
fn collect(
    tables: &[Option<(ChildKind, TableState)>],
    uid: &str,
    namespace: &str,
) -> Vec<ChildEntry> {
    let mut owned: Owned<'_> = HashMap::new();
    for (kind, state) in tables.iter().flatten() {
        for row in state.view("", None, false, 0) {
            for owner in &row.owners {
                owned
                    .entry(owner.as_str())
                    .or_default()
                    .push((kind, state, row));
            }
        }
    }
    attach_retained_claims(tables, &mut owned);
    for siblings in owned.values_mut() {
        siblings.sort_by(|a, b| (&a.0.kind, &a.2.name).cmp(&(&b.0.kind, &b.2.name)));
    }
    let mut out = Vec::new();
    let mut seen = HashSet::from([uid.to_string()]);
    descend(&owned, uid, 1, namespace, &mut seen, &mut out);
    out
}

/// Puts each StatefulSet's claims under it although they name no owner: a set whose
/// claims are retained when it is deleted (Kubernetes' default, and a Stack that keeps
/// its data) does not own them. The controller names them `TEMPLATE-SET-ORDINAL`.
fn attach_retained_claims<'a>(
    tables: &'a [Option<(ChildKind, TableState)>],
    owned: &mut Owned<'a>,
) {
    let rows_of = |kind: &'static str| {
        let mut rows = Vec::new();
        for (k, state) in tables.iter().flatten().filter(|(k, _)| k.kind == kind) {
            rows.extend(
                state
                    .view("", None, false, 0)
                    .into_iter()
                    .map(|row| (k, state, row)),
            );
        }
        rows
    };
    let unowned_claims: Vec<_> = rows_of("PersistentVolumeClaim")
        .into_iter()
        .filter(|(_, _, row)| row.owners.is_empty())
        .collect();
    if unowned_claims.is_empty() {
        return;
    }
    for (_, _, set) in rows_of("StatefulSet") {
        let suffix = format!("-{}-", set.name);
        for claim in &unowned_claims {
            let made_by_set =
                claim
                    .2
                    .name
                    .rsplit_once(&suffix)
                    .is_some_and(|(template, ordinal)| {
                        !template.is_empty()
                            && !ordinal.is_empty()
                            && ordinal.bytes().all(|b| b.is_ascii_digit())
                    });
            if made_by_set {
                owned.entry(set.uid.as_str()).or_default().push(*claim);
            }
        }
    }
}

/// Appends `owner`'s children at `depth`, each followed by its own (recursion bounded
/// by [`MAX_DEPTH`]; `seen` stops ownership cycles).
fn descend(
    owned: &Owned<'_>,
    owner: &str,
    depth: u8,
    namespace: &str,
    seen: &mut HashSet<String>,
    out: &mut Vec<ChildEntry>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for (kind, state, row) in owned.get(owner).into_iter().flatten() {
        if out.len() >= MAX_ENTRIES || !seen.insert(row.uid.clone()) {
            continue;
        }
        out.push(entry(kind, state, row, namespace, depth));
        descend(owned, &row.uid, depth + 1, namespace, seen, out);
    }
}

fn entry(
    kind: &ChildKind,
    state: &TableState,
    row: &Row,
    namespace: &str,
    depth: u8,
) -> ChildEntry {
    let summary = state
        .visible_columns(false)
        .into_iter()
        .filter_map(|i| {
            let column = state.columns.get(i)?;
            // Ages tick beside the list, from the creation time: the API server's own
            // "Age" cells of built-in kinds are text as of the list, and would freeze.
            let age = column.kind == "date" || column.name.eq_ignore_ascii_case("age");
            (column.format != "name" && !age).then(|| {
                let value = row.cells.get(i).cloned().unwrap_or(serde_json::Value::Null);
                format!("{}: {}", column.name, cell_text(&value, &column.kind, 0))
            })
        })
        .collect::<Vec<_>>()
        .join(" · ");
    ChildEntry {
        kind: kind.kind.clone(),
        name: row.name.clone(),
        href: kind.resource.object_path(Some(namespace), &row.name),
        summary,
        created: row.created.clone(),
        deleting: row.deleting,
        depth,
    }
}

#[cfg(test)]
mod tests {
    use portico_core::resource::ResourceRef;
    use portico_core::table::wire::TableSnapshot;
    use std::sync::Arc;

    use super::*;

    fn kind(name: &str, plural: &str) -> ChildKind {
        ChildKind {
            resource: ResourceRef {
                group: "apps".into(),
                version: "v1".into(),
                plural: plural.into(),
            },
            kind: name.into(),
        }
    }

    fn table(rows: &[(&str, &str, &[&str])]) -> TableState {
        TableState::from_snapshot(TableSnapshot {
            columns: vec![],
            rows: rows
                .iter()
                .map(|(uid, name, owners)| {
                    Arc::new(Row {
                        uid: (*uid).into(),
                        name: (*name).into(),
                        namespace: Some("ns".into()),
                        resource_version: "1".into(),
                        created: None,
                        deleting: false,
                        owners: owners.iter().map(|o| (*o).to_string()).collect(),
                        changed: None,
                        cells: vec![],
                    })
                })
                .collect(),
            resource_version: "1".into(),
        })
    }

    #[test]
    fn descendants_come_in_tree_order_and_cycles_end() {
        let tables = vec![
            Some((
                kind("Deployment", "deployments"),
                table(&[("d", "web", &["stack"]), ("other", "x", &["someone"])]),
            )),
            Some((
                kind("ReplicaSet", "replicasets"),
                table(&[("rs", "web-1", &["d"])]),
            )),
            Some((
                kind("Pod", "pods"),
                // A cycle (b owns a, a owns b) below the ReplicaSet must not loop.
                table(&[
                    ("p2", "web-1-b", &["rs"]),
                    ("p1", "web-1-a", &["rs", "p2"]),
                    ("p2b", "web-1-c", &["p1"]),
                ]),
            )),
            Some((
                kind("Service", "services"),
                table(&[("s", "web", &["stack"])]),
            )),
        ];
        let got: Vec<(String, u8)> = collect(&tables, "stack", "ns")
            .into_iter()
            .map(|c| (format!("{}/{}", c.kind, c.name), c.depth))
            .collect();
        let want: Vec<(String, u8)> = [
            ("Deployment/web", 1),
            ("ReplicaSet/web-1", 2),
            ("Pod/web-1-a", 3),
            ("Pod/web-1-c", 4),
            ("Pod/web-1-b", 3),
            ("Service/web", 1),
        ]
        .iter()
        .map(|(k, d)| (k.to_string(), *d))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn the_status_summary_leaves_ages_to_the_ticking_column() {
        use portico_core::table::wire::Column;
        let column = |name: &str, kind: &str, format: &str| Column {
            name: name.into(),
            kind: kind.into(),
            format: format.into(),
            description: String::new(),
            priority: 0,
            ..Default::default()
        };
        // As the API server describes a Pod: its Age is text, not a date.
        let state = TableState::from_snapshot(TableSnapshot {
            columns: vec![
                column("Name", "string", "name"),
                column("Ready", "string", ""),
                column("Status", "string", ""),
                column("Age", "string", ""),
            ],
            rows: vec![Arc::new(Row {
                uid: "p".into(),
                name: "db-0".into(),
                namespace: Some("ns".into()),
                resource_version: "1".into(),
                created: None,
                deleting: false,
                changed: None,
                owners: vec!["stack".into()],
                cells: ["db-0", "1/1", "Running", "0s"]
                    .iter()
                    .map(|c| serde_json::Value::from(*c))
                    .collect(),
            })],
            resource_version: "1".into(),
        });
        let tables = vec![Some((kind("Pod", "pods"), state))];
        let children = collect(&tables, "stack", "ns");
        assert_eq!(
            children.first().map(|c| c.summary.as_str()),
            Some("Ready: 1/1 · Status: Running")
        );
    }

    #[test]
    fn a_statefulsets_retained_claims_show_under_it_and_no_one_elses() {
        let tables = vec![
            Some((
                kind("StatefulSet", "statefulsets"),
                table(&[("set", "db", &["stack"])]),
            )),
            Some((
                kind("PersistentVolumeClaim", "persistentvolumeclaims"),
                table(&[
                    ("c0", "data-db-0", &[]),
                    ("c1", "data-db-1", &[]),
                    // Another set's (db-old), a claim that only looks alike, one owned
                    // by someone else.
                    ("x", "data-db-old-0", &[]),
                    ("y", "db-0", &[]),
                    ("z", "logs-db-2", &["someone"]),
                ]),
            )),
        ];
        let got: Vec<String> = collect(&tables, "stack", "ns")
            .into_iter()
            .map(|c| format!("{}/{}@{}", c.kind, c.name, c.depth))
            .collect();
        assert_eq!(
            got,
            [
                "StatefulSet/db@1",
                "PersistentVolumeClaim/data-db-0@2",
                "PersistentVolumeClaim/data-db-1@2"
            ]
        );
    }
}
