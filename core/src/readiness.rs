//! Whether an object is ready, read from its live table's row, for "everything not
//! Ready" and views of several kinds. A CRD's objects say so in their `Ready`
//! condition (read by two added columns, the same for every kind); built-in kinds in
//! the columns kubectl prints (`READY 1/3`, `DESIRED 3 … READY 1`).

use crate::resource::ResourceKind;
use crate::table::format::cell_text;
use crate::table::wire::{Column, Row};

/// The added columns every kind's table in such a view carries (`columns=`).
pub const READY_COLUMNS: &str = r#"Ready condition:{.status.conditions[?(@.type=="Ready")].status},Ready reason:{.status.conditions[?(@.type=="Ready")].reason}"#;
const CONDITION: &str = "Ready condition";
const REASON: &str = "Ready reason";
/// Kinds looked at in one view at most: each is a live feed of the person's own.
pub const MAX_KINDS: usize = 24;
/// Built-in kinds whose readiness kubectl's columns carry.
pub const BUILTIN_READINESS: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "nodes"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not ready, and why (the condition's reason, or kubectl's count).
    NotReady(String),
    /// Nothing in the row says.
    Unknown,
}

/// The kinds "everything not Ready" looks at: those with readiness, in `namespaced`
/// views only namespaced ones, built-in kinds first, at most [`MAX_KINDS`]; and how
/// many more there were.
pub fn kinds_with_readiness(
    kinds: &[ResourceKind],
    namespaced_only: bool,
) -> (Vec<ResourceKind>, usize) {
    let mut found: Vec<ResourceKind> = kinds
        .iter()
        .filter(|k| k.flags.readiness && (k.namespaced || !namespaced_only))
        .cloned()
        .collect();
    found.sort_by_cached_key(|k| (!k.flags.builtin, k.group.clone(), k.plural.clone()));
    let more = found.len().saturating_sub(MAX_KINDS);
    found.truncate(MAX_KINDS);
    (found, more)
}

/// The kinds `spec` names as `kubectl get` takes them (`pods,deployments.apps,
/// certificates.cert-manager.io`: plural, `plural.group`, kind or short name), at most
/// [`MAX_KINDS`]; and the names that are no kind.
pub fn resolve_kinds(spec: &str, kinds: &[ResourceKind]) -> (Vec<ResourceKind>, Vec<String>) {
    let mut found: Vec<ResourceKind> = Vec::new();
    let mut unknown = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let lower = name.to_lowercase();
        let matches = |k: &&ResourceKind| {
            let qualified = format!("{}.{}", k.plural, k.group);
            k.plural == lower
                || qualified == lower
                || k.kind.to_lowercase() == lower
                || k.short_names.contains(&lower)
        };
        // Of several groups serving one plural, the core one, else a built-in one (as
        // kubectl prefers `pods` to metrics.k8s.io's).
        let mut candidates: Vec<&ResourceKind> = kinds.iter().filter(matches).collect();
        candidates.sort_by_key(|k| (!k.group.is_empty(), !k.flags.builtin));
        match candidates.first() {
            Some(k)
                if !found
                    .iter()
                    .any(|f| f.group == k.group && f.plural == k.plural) =>
            {
                found.push((*k).clone())
            }
            Some(_) => {}
            None => unknown.push(name.to_string()),
        }
    }
    found.truncate(MAX_KINDS);
    (found, unknown)
}

/// A kind as `resolve_kinds` reads it back: `plural` or `plural.group`.
pub fn kind_name(kind: &ResourceKind) -> String {
    if kind.group.is_empty() {
        kind.plural.clone()
    } else {
        format!("{}.{}", kind.plural, kind.group)
    }
}

/// A row's readiness, by its `Ready` condition when it has one, else by kubectl's
/// columns.
pub fn of_row(columns: &[Column], row: &Row) -> Readiness {
    let text = |name: &str| -> Option<String> {
        let i = columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))?;
        let column = columns.get(i)?;
        let text = cell_text(row.cells.get(i)?, &column.kind, 0);
        (!text.is_empty() && text != "<none>").then_some(text)
    };
    // A Pod that ran to completion is done, not failing (kubectl: Completed).
    if text("Status").is_some_and(|s| s == "Completed") {
        return Readiness::Ready;
    }
    match text(CONDITION).as_deref() {
        Some("True") => return Readiness::Ready,
        Some(status) => {
            let reason = text(REASON).unwrap_or_else(|| format!("Ready={status}"));
            return Readiness::NotReady(reason);
        }
        None => {}
    }
    if let Some(ready) = text("Ready") {
        if let Some((have, want)) = ready.split_once('/') {
            return if have.trim() == want.trim() {
                Readiness::Ready
            } else {
                Readiness::NotReady(format!("{ready} ready"))
            };
        }
        // A DaemonSet's (and a ReplicaSet's) counts: Ready of Desired.
        if let Some(desired) = text("Desired") {
            return if desired == ready {
                Readiness::Ready
            } else {
                Readiness::NotReady(format!("{ready} of {desired} ready"))
            };
        }
    }
    // A Node's STATUS column ("Ready", "NotReady", "Ready,SchedulingDisabled").
    if let Some(status) = text("Status") {
        let first = status.split(',').next().unwrap_or_default();
        if first == "Ready" {
            return Readiness::Ready;
        }
        if first == "NotReady" {
            return Readiness::NotReady(status);
        }
    }
    Readiness::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::KindFlags;
    use serde_json::{Value, json};

    fn columns(names: &[&str]) -> Vec<Column> {
        names
            .iter()
            .map(|n| Column {
                name: (*n).into(),
                kind: "string".into(),
                ..Column::default()
            })
            .collect()
    }

    fn row(cells: Vec<Value>) -> Row {
        Row {
            uid: "u".into(),
            name: "n".into(),
            namespace: None,
            resource_version: "1".into(),
            created: None,
            deleting: false,
            owners: vec![],
            cells,
            changed: None,
        }
    }

    #[test]
    fn the_ready_condition_decides_when_there_is_one() {
        let cols = columns(&["Name", "Ready", "Ready condition", "Ready reason"]);
        let r = |c: Value, why: Value| of_row(&cols, &row(vec![json!("n"), json!("1/1"), c, why]));
        assert_eq!(r(json!("True"), json!("<none>")), Readiness::Ready);
        assert_eq!(
            r(json!("False"), json!("DoesNotExist")),
            Readiness::NotReady("DoesNotExist".into())
        );
        assert_eq!(
            r(json!("Unknown"), json!("<none>")),
            Readiness::NotReady("Ready=Unknown".into())
        );
        // No condition: kubectl's READY column.
        assert_eq!(r(json!("<none>"), json!("<none>")), Readiness::Ready);
    }

    #[test]
    fn kubectls_columns_decide_for_built_in_kinds() {
        let pods = columns(&["Name", "Ready", "Status"]);
        let pod = |ready: &str, status: &str| {
            of_row(&pods, &row(vec![json!("p"), json!(ready), json!(status)]))
        };
        assert_eq!(
            pod("0/1", "CrashLoopBackOff"),
            Readiness::NotReady("0/1 ready".into())
        );
        assert_eq!(pod("0/1", "Completed"), Readiness::Ready);
        assert_eq!(pod("2/2", "Running"), Readiness::Ready);
        let ds = columns(&["Name", "Desired", "Current", "Ready"]);
        assert_eq!(
            of_row(&ds, &row(vec![json!("d"), json!(3), json!(3), json!(1)])),
            Readiness::NotReady("1 of 3 ready".into())
        );
        let nodes = columns(&["Name", "Status"]);
        assert_eq!(
            of_row(
                &nodes,
                &row(vec![json!("n"), json!("Ready,SchedulingDisabled")])
            ),
            Readiness::Ready
        );
        assert_eq!(
            of_row(&columns(&["Name"]), &row(vec![json!("x")])),
            Readiness::Unknown
        );
    }

    #[test]
    fn kinds_are_named_as_kubectl_get_takes_them() {
        let kind = |group: &str, kind: &str, plural: &str, short: &[&str]| ResourceKind {
            group: group.into(),
            kind: kind.into(),
            plural: plural.into(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: true,
            versions: vec!["v1".into()],
            flags: KindFlags::default(),
        };
        let kinds = [
            kind("", "Pod", "pods", &["po"]),
            kind("apps", "Deployment", "deployments", &["deploy"]),
            kind("cert-manager.io", "Certificate", "certificates", &["cert"]),
        ];
        let (found, unknown) = resolve_kinds(
            "po, Deployment,certificates.cert-manager.io,pods,nope",
            &kinds,
        );
        let names: Vec<String> = found.iter().map(kind_name).collect();
        assert_eq!(
            names,
            ["pods", "deployments.apps", "certificates.cert-manager.io"]
        );
        assert_eq!(unknown, ["nope"]);
    }

    #[test]
    fn kinds_with_readiness_come_built_in_first_and_bounded() {
        let kind = |group: &str, plural: &str, builtin: bool, namespaced: bool| ResourceKind {
            group: group.into(),
            kind: plural.into(),
            plural: plural.into(),
            short_names: vec![],
            namespaced,
            versions: vec!["v1".into()],
            flags: KindFlags {
                builtin,
                readiness: true,
                ..KindFlags::default()
            },
        };
        let mut kinds = vec![
            kind("cert-manager.io", "certificates", false, true),
            kind("", "nodes", true, false),
            kind("", "pods", true, true),
        ];
        kinds.extend((0..30).map(|i| kind("x.io", &format!("k{i:02}"), false, true)));
        kinds.push(ResourceKind {
            flags: KindFlags::default(),
            ..kind("", "configmaps", true, true)
        });
        let (found, more) = kinds_with_readiness(&kinds, true);
        assert_eq!(found.len(), MAX_KINDS);
        assert_eq!(more, 32 - MAX_KINDS);
        assert_eq!(found[0].plural, "pods");
        assert_eq!(found[1].plural, "certificates");
        assert!(
            !found
                .iter()
                .any(|k| k.plural == "nodes" || k.plural == "configmaps")
        );
    }
}
