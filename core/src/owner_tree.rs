//! The live owner tree a detail page shows: every object owned, directly or through
//! others, by the one on the page.

use serde::{Deserialize, Serialize};

use crate::encode::percent_encode;

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
