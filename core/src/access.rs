//! What a person may do in a namespace, as the "What may I do here" page shows it:
//! each kind by verb, grants limited to some names, subresources, and whether the
//! API server's answer was complete.

use serde::{Deserialize, Serialize};

use crate::resource::ResourceRef;

/// The verbs the page shows a column for, in order.
pub const VERBS: [&str; 7] = [
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// One kind: which of [`VERBS`] the person may use on every object of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindAccess {
    pub resource: ResourceRef,
    pub kind: String,
    /// One per verb of [`VERBS`].
    pub allowed: Vec<bool>,
    /// Grants on some objects only: "get, update: web, db".
    pub by_name: Vec<String>,
}

impl KindAccess {
    /// Whether anything at all is allowed on it.
    pub fn any(&self) -> bool {
        self.allowed.iter().any(|a| *a) || !self.by_name.is_empty()
    }
}

/// Everything a person may do in one namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceAccess {
    pub namespace: String,
    /// The kinds listed in namespaces, by name.
    pub kinds: Vec<KindAccess>,
    /// Subresources granted ("create pods/exec", "get pods/log").
    pub subresources: Vec<String>,
    /// The API server could not say everything (an authorizer other than RBAC, or a
    /// rule it could not read): what is missing may still be allowed.
    pub incomplete: bool,
    /// Why, in the API server's words.
    pub note: Option<String>,
}

/// Where the page is, for `namespace` (`None`: it asks for one).
pub fn page_path(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("/access?ns={ns}"),
        None => "/access".to_string(),
    }
}
