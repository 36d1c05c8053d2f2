//! What crosses the wire for a live table: one snapshot, then ordered deltas.

use std::sync::Arc;

use crate::encode::percent_encode;
use crate::resource::{ResourceRef, is_path_segment};
use serde::{Deserialize, Serialize};

/// A column as the Table API defines it, or one a person added.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub description: String,
    /// Columns with priority above 0 appear only in the wide view, as in `kubectl get -o wide`.
    #[serde(default)]
    pub priority: i32,
    /// An added column's JSONPath (see [`crate::table::added_columns`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why an added column's path cannot be read; its cells are empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// One object's row: its cells exactly as the Table API sent them, plus the metadata
/// the UI needs to key, link and age it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub uid: String,
    pub name: String,
    pub namespace: Option<String>,
    pub resource_version: String,
    /// RFC 3339 creation time.
    pub created: Option<String>,
    /// Set when a deletion is pending (deletionTimestamp is set).
    pub deleting: bool,
    /// uids of the objects this one's ownerReferences name.
    #[serde(default)]
    pub owners: Vec<String>,
    pub cells: Vec<serde_json::Value>,
    /// RFC 3339: when its spec or metadata last changed (its newest `managedFields`
    /// entry other than a status write), for the home page's recent changes. The
    /// server's alone: tables do not carry it to the page.
    #[serde(skip)]
    pub changed: Option<String>,
}

/// Rows are shared, not copied: the server holds one copy of a row however many
/// feeds, histories and snapshots hold it (see the server's `watch::intern`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSnapshot {
    pub columns: Vec<Column>,
    pub rows: Vec<Arc<Row>>,
    pub resource_version: String,
}

/// Changes since the previous message, in order; `upserts` replace rows by uid.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TableDelta {
    pub upserts: Vec<Arc<Row>>,
    pub deletes: Vec<String>,
    pub resource_version: String,
}

/// The SSE event names a live table stream uses.
pub mod sse_event {
    pub const SNAPSHOT: &str = "snapshot";
    pub const DELTA: &str = "delta";
    /// The stream cannot continue as asked (e.g. forbidden or unknown resource);
    /// data is a sentence for the user.
    pub const PROBLEM: &str = "problem";
}

/// The longest label or field selector a live table accepts: far above any real one
/// (a selector naming 40 labels is under 2 KB), far below what would burden the API
/// server with every watch.
pub const MAX_SELECTOR_LEN: usize = 4096;

/// Query parameters of the live table stream (`/api/live/table`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TableQuery {
    pub group: String,
    pub version: String,
    pub plural: String,
    /// Absent: every namespace (or a cluster-scoped resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
    /// Columns added after kubectl's, as `kubectl get -o custom-columns` takes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub columns: Option<String>,
}

impl TableQuery {
    pub fn resource(&self) -> ResourceRef {
        ResourceRef::new(&self.group, &self.version, &self.plural)
    }

    /// Whether the resource and namespace are safe to put into an API path, and the
    /// selectors of a sensible length.
    pub fn is_valid(&self) -> bool {
        let short = |s: &Option<String>| s.as_deref().is_none_or(|s| s.len() <= MAX_SELECTOR_LEN);
        self.resource().is_valid()
            && self.namespace.as_deref().is_none_or(is_path_segment)
            && short(&self.label_selector)
            && short(&self.field_selector)
            && self
                .columns
                .as_deref()
                .is_none_or(crate::table::added_columns::is_within_bounds)
    }

    /// The columns it adds, if any.
    pub fn added_columns(&self) -> Vec<crate::table::added_columns::AddedColumn> {
        self.columns
            .as_deref()
            .map(crate::table::added_columns::parse)
            .unwrap_or_default()
    }

    /// The URL query string of the live stream for this query.
    pub fn to_query_string(&self) -> String {
        let mut pairs = vec![
            ("group", self.group.as_str()),
            ("version", self.version.as_str()),
            ("plural", self.plural.as_str()),
        ];
        if let Some(ns) = &self.namespace {
            pairs.push(("namespace", ns));
        }
        if let Some(sel) = &self.label_selector {
            pairs.push(("label_selector", sel));
        }
        if let Some(sel) = &self.field_selector {
            pairs.push(("field_selector", sel));
        }
        if let Some(columns) = &self.columns {
            pairs.push(("columns", columns));
        }
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_are_percent_encoded() {
        let q = TableQuery {
            group: "".into(),
            version: "v1".into(),
            plural: "events".into(),
            namespace: Some("default".into()),
            label_selector: Some("app in (a,b)".into()),
            field_selector: Some("involvedObject.uid=1-2".into()),
            columns: None,
        };
        assert_eq!(
            q.to_query_string(),
            "group=&version=v1&plural=events&namespace=default&label_selector=app%20in%20%28a%2Cb%29&field_selector=involvedObject.uid%3D1-2"
        );
    }
}
