//! A resource type as the API server and Portico's URLs address it, and the name rules
//! that keep a crafted value inside its path segment.

use serde::{Deserialize, Serialize};

/// One object as the API server addresses it: its kind's resource, its namespace
/// (`None` for a cluster-scoped kind) and its name. The key of every endpoint that
/// reads, changes or deletes one object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    pub resource: ResourceRef,
    pub namespace: Option<String>,
    pub name: String,
}

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
    /// Its objects say whether they are ready (a CRD whose schema has
    /// `status.conditions`, or a built-in kind with readiness): "everything not Ready"
    /// looks at it.
    #[serde(default)]
    pub readiness: bool,
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
}
