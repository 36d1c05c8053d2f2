//! What crosses the wire for a live table: one snapshot, then ordered deltas.

use serde::{Deserialize, Serialize};

/// A resource type as the API server addresses it. `group` is empty for the core group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceRef {
    pub group: String,
    pub version: String,
    pub plural: String,
}

impl ResourceRef {
    pub fn new(group: &str, version: &str, plural: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
        }
    }

    /// `v1` for the core group, `group/version` otherwise.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The collection path on the API server, e.g. `/apis/g/v/namespaces/ns/plural`.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) => format!("{base}/namespaces/{ns}/{}", self.plural),
            None => format!("{base}/{}", self.plural),
        }
    }

    /// The group as it appears in Portico's URLs (`core` for the core group).
    pub fn url_group(&self) -> &str {
        if self.group.is_empty() {
            "core"
        } else {
            &self.group
        }
    }

    /// Inverse of [`Self::url_group`].
    pub fn from_url(group: &str, version: &str, plural: &str) -> Self {
        let group = if group == "core" { "" } else { group };
        Self::new(group, version, plural)
    }

    /// Whether every part is a plausible API path segment (so a crafted value cannot
    /// steer a request to another API path). The group may be empty (core).
    pub fn is_valid(&self) -> bool {
        (self.group.is_empty() || is_path_segment(&self.group))
            && is_path_segment(&self.version)
            && is_path_segment(&self.plural)
    }

    /// Portico's page for this resource's table.
    pub fn page_path(&self) -> String {
        format!("/r/{}/{}/{}", self.url_group(), self.version, self.plural)
    }

    /// Portico's page for one object of this resource (`_` for a cluster-scoped one's
    /// namespace).
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{}/{name}", self.page_path(), namespace.unwrap_or("_"))
    }
}

/// A column as the Table API defines it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSnapshot {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    pub resource_version: String,
}

/// Changes since the previous message, in order; `upserts` replace rows by uid.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TableDelta {
    pub upserts: Vec<Row>,
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
        pairs
            .iter()
            .map(|(k, v)| format!("{k}={}", percent_encode(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// A lowercase DNS-style name: `[a-z0-9]([-a-z0-9.]*[a-z0-9])?`, at most 253 bytes.
/// Resource names, groups, versions and namespaces all fit it.
pub fn is_path_segment(text: &str) -> bool {
    let bytes = text.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 253
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes.iter().all(|b| edge(b) || *b == b'-' || *b == b'.')
        && !text.contains("..")
}

/// A name the API server could hold for an object of any kind, that also stays one
/// path segment in a request URL: 1 to 253 visible ASCII characters, not `.` or `..`,
/// and none of `/` and `%` (the API server's path-segment rule) or `?`, `#` and `\`
/// (which would end or bend the path before the API server saw it). DNS names, and the
/// `system:`-style names RBAC objects carry, all pass.
pub fn is_object_name(text: &str) -> bool {
    (1..=253).contains(&text.len())
        && text != "."
        && text != ".."
        && text
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'/' | b'%' | b'?' | b'#' | b'\\'))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(byte))
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// One entry of the resource navigation: a CRD or a built-in kind Portico lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceKind {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub short_names: Vec<String>,
    pub namespaced: bool,
    /// Served versions, the storage (preferred) version first.
    pub versions: Vec<String>,
    pub flags: KindFlags,
}

/// What the pages need to know about a kind, so that none of them guesses from names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KindFlags {
    /// Served by Kubernetes itself or an aggregated API, not a CRD: there is no schema
    /// to build a form from.
    pub builtin: bool,
    /// Portico's own Stack kind (its page shows how to connect).
    pub is_stack: bool,
    /// Objects of this kind commonly own others: their page looks for children.
    pub can_own: bool,
}

impl ResourceKind {
    pub fn resource(&self, version: Option<&str>) -> ResourceRef {
        let version = version
            .or(self.versions.first().map(String::as_str))
            .unwrap_or("v1");
        ResourceRef::new(&self.group, version, &self.plural)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_names_cannot_leave_their_path_segment() {
        for good in [
            "web-1",
            "a.b.c",
            "system:controller:job",
            "x_y",
            "user@example.com",
        ] {
            assert!(is_object_name(good), "{good}");
        }
        let long = "a".repeat(254);
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a%2Fb",
            "..%2Fsecrets",
            "x?watch=true",
            "x#frag",
            "a\\b",
            "a b",
            "tab\t",
            "nul\0",
            "é",
            long.as_str(),
        ] {
            assert!(!is_object_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn core_and_grouped_paths() {
        let pods = ResourceRef::new("", "v1", "pods");
        assert_eq!(
            pods.collection_path(Some("ns")),
            "/api/v1/namespaces/ns/pods"
        );
        assert_eq!(pods.collection_path(None), "/api/v1/pods");
        assert_eq!(pods.api_version(), "v1");
        assert_eq!(pods.page_path(), "/r/core/v1/pods");
        assert_eq!(ResourceRef::from_url("core", "v1", "pods"), pods);
        let ats = ResourceRef::new("cnat.study.jayground8", "v1alpha1", "ats");
        assert_eq!(
            ats.collection_path(Some("default")),
            "/apis/cnat.study.jayground8/v1alpha1/namespaces/default/ats"
        );
        assert_eq!(ats.api_version(), "cnat.study.jayground8/v1alpha1");
    }

    #[test]
    fn path_segments_reject_traversal_and_odd_characters() {
        for ok in ["pods", "v1", "cnat.study.jayground8", "a-b", "x"] {
            assert!(is_path_segment(ok), "{ok}");
        }
        for bad in [
            "",
            "..",
            "a/b",
            "A",
            "-a",
            "a-",
            "a..b",
            "pods?watch=1",
            "%2e%2e",
            "a b",
        ] {
            assert!(!is_path_segment(bad), "{bad}");
        }
        assert!(ResourceRef::new("", "v1", "pods").is_valid());
        assert!(!ResourceRef::new("", "v1", "pods/../secrets").is_valid());
    }

    #[test]
    fn query_strings_are_percent_encoded() {
        let q = TableQuery {
            group: "".into(),
            version: "v1".into(),
            plural: "events".into(),
            namespace: Some("default".into()),
            label_selector: Some("app in (a,b)".into()),
            field_selector: Some("involvedObject.uid=1-2".into()),
        };
        assert_eq!(
            q.to_query_string(),
            "group=&version=v1&plural=events&namespace=default&label_selector=app%20in%20%28a%2Cb%29&field_selector=involvedObject.uid%3D1-2"
        );
    }
}

/// An object owned, directly or through others, by the one a detail page shows, with
/// a one-line summary of its printer columns. Entries come in tree order: each one
/// after its owner, `depth` 1 for direct children, 2 for theirs, and so on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildEntry {
    pub kind: String,
    pub name: String,
    pub href: String,
    /// `Column: value` pairs of the child's own table row, Name and Age left out.
    pub summary: String,
    /// RFC 3339 creation time: the page shows the age, ticking.
    #[serde(default)]
    pub created: Option<String>,
    pub deleting: bool,
    #[serde(default = "direct")]
    pub depth: u8,
}

fn direct() -> u8 {
    1
}

/// Query of the live children stream (`/api/live/children`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildrenQuery {
    pub namespace: String,
    pub uid: String,
    /// The owner's API group: kinds in it (and its domain) are looked in first.
    #[serde(default)]
    pub group: String,
}

impl ChildrenQuery {
    pub fn to_query_string(&self) -> String {
        format!(
            "namespace={}&uid={}&group={}",
            percent_encode(&self.namespace),
            percent_encode(&self.uid),
            percent_encode(&self.group)
        )
    }
}
