//! Data shared by the server and the browser. Plain serde types, no I/O.

use serde::{Deserialize, Serialize};

/// One served or unserved version of a CRD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
}

/// What the CRD list shows about a CustomResourceDefinition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CrdSummary {
    /// `plural.group`
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub short_names: Vec<String>,
    /// `Namespaced` or `Cluster`
    pub scope: String,
    pub versions: Vec<CrdVersion>,
    pub established: bool,
    /// Why Portico cannot use this definition fully (a schema too deep to read, or a
    /// kind Kubernetes serves itself); shown on its row.
    #[serde(default)]
    pub problem: Option<String>,
}

impl CrdSummary {
    /// The versions the API server serves, storage version first.
    pub fn served_versions(&self) -> impl Iterator<Item = &CrdVersion> {
        let storage = self.versions.iter().filter(|v| v.served && v.storage);
        let others = self.versions.iter().filter(|v| v.served && !v.storage);
        storage.chain(others)
    }

    /// Whether a free-text filter matches this CRD (case-insensitive, any of
    /// kind, name, group, short names, scope or a version; every word must match).
    pub fn matches(&self, filter: &str) -> bool {
        let haystack = format!(
            "{} {} {} {} {} {}",
            self.kind,
            self.name,
            self.group,
            self.short_names.join(" "),
            self.scope,
            self.versions
                .iter()
                .map(|v| v.name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        )
        .to_lowercase();
        filter
            .to_lowercase()
            .split_whitespace()
            .all(|word| haystack.contains(word))
    }
}

/// A field-level reason the API server gave for refusing a request
/// (`Status.details.causes[]`), kept exactly as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldCause {
    /// e.g. `spec.choice`; empty when the server named no field.
    pub field: String,
    /// e.g. `FieldValueInvalid`
    pub reason: String,
    pub message: String,
}

/// The API server's refusal of a request, as a `Status` object describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiRejection {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub causes: Vec<FieldCause>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> CrdSummary {
        CrdSummary {
            name: "crdplural.iksoon.test.com".into(),
            group: "iksoon.test.com".into(),
            kind: "CrdKind".into(),
            plural: "crdplural".into(),
            short_names: vec!["crdshort".into(), "iksoontest".into()],
            scope: "Namespaced".into(),
            versions: vec![
                CrdVersion {
                    name: "v1beta1".into(),
                    served: true,
                    storage: false,
                },
                CrdVersion {
                    name: "v1".into(),
                    served: true,
                    storage: true,
                },
                CrdVersion {
                    name: "v0".into(),
                    served: false,
                    storage: false,
                },
            ],
            established: true,
            problem: None,
        }
    }

    #[test]
    fn filter_matches_every_word_case_insensitively() {
        let c = crd();
        assert!(c.matches(""));
        assert!(c.matches("crdkind"));
        assert!(c.matches("IKSOON namespaced"));
        assert!(c.matches("crdshort"));
        assert!(!c.matches("iksoon cluster"));
        assert!(!c.matches("website"));
    }

    #[test]
    fn served_versions_put_storage_first_and_skip_unserved() {
        let names: Vec<_> = crd().served_versions().map(|v| v.name.clone()).collect();
        assert_eq!(names, ["v1", "v1beta1"]);
    }
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    pub kind: String,
    pub status: String,
    pub reason: String,
    pub message: String,
    pub last_transition_time: String,
}

/// An object up the ownerReferences chain (depth 1 = direct owner).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnerLink {
    pub kind: String,
    pub name: String,
    pub controller: bool,
    pub depth: usize,
    /// Portico's page for the owner, when its kind could be resolved.
    pub href: Option<String>,
    /// Why the owner could not be followed further (gone, forbidden, unknown kind).
    pub note: Option<String>,
}

/// An object another one names in its spec (a binding's Stack and workload), with
/// Portico's page for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mention {
    /// What it is to the object (`Stack`, `Workload`).
    pub role: String,
    pub kind: String,
    pub name: String,
    pub href: String,
}

/// What the detail page shows about one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectDetail {
    pub kind: String,
    pub api_version: String,
    pub name: String,
    pub namespace: Option<String>,
    pub uid: String,
    pub created: Option<String>,
    /// Set while a deletion waits, typically on finalizers.
    pub deletion_timestamp: Option<String>,
    pub finalizers: Vec<String>,
    pub labels: Vec<(String, String)>,
    pub conditions: Vec<Condition>,
    pub owners: Vec<OwnerLink>,
    /// The objects its spec names, where Portico knows the kind (a StackBinding's).
    #[serde(default)]
    pub mentions: Vec<Mention>,
    /// The object as YAML, without managedFields; Secret values are replaced.
    pub yaml: String,
    /// The object's `status` (null when it has none).
    pub status: serde_json::Value,
    /// What the page may offer for this kind (edit form, children, connection).
    pub flags: crate::resource::KindFlags,
    /// A Pod's summary: where and how it runs, container by container.
    #[serde(default)]
    pub pod: Option<PodSummary>,
    /// The Pods it runs, as a label selector (a workload's or a Stack's): its page
    /// follows their logs merged.
    #[serde(default)]
    pub pod_selector: Option<String>,
}

/// A Pod at a glance: its phase, where it runs, and each container's image, state,
/// restarts and resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodSummary {
    /// The phase, with the reason when the Pod gives one (`Failed: Evicted`).
    pub phase: String,
    pub node: Option<String>,
    pub pod_ip: Option<String>,
    pub host_ip: Option<String>,
    /// Guaranteed, Burstable or BestEffort.
    pub qos: Option<String>,
    /// Init containers first (they run first), then the others.
    pub containers: Vec<ContainerSummary>,
}

/// One container of a Pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSummary {
    pub name: String,
    pub init: bool,
    pub image: String,
    pub ready: bool,
    pub restarts: i32,
    /// `Running`, `Waiting: CrashLoopBackOff`, `Terminated: Completed (exit 0)`, or
    /// `Not started`.
    pub state: String,
    /// Since when it is in that state (RFC 3339), where the Pod says.
    pub since: Option<String>,
    pub requests: Vec<(String, String)>,
    pub limits: Vec<(String, String)>,
}

/// What the viewer may do with a kind in a namespace (the UI disables the rest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permissions {
    pub create: bool,
    pub update: bool,
    pub delete: bool,
}

/// What deleting a Stack does to its data, as the person asking may see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackData {
    /// Its choice keeps data on volumes (MySQL, not Tomcat).
    pub holds_data: bool,
    /// `spec.deletionPolicy` is Retain: the volumes and their password outlive it.
    pub keeps: bool,
    /// Its volume claims.
    pub volumes: Vec<DataVolume>,
    /// Why the volumes could not be listed (the person may not list claims there).
    pub volumes_unknown: Option<String>,
    /// The credentials Secret holding the password that opens the volumes.
    pub secret: Option<String>,
    /// The Secret is owned by the Stack (made before `deletionPolicy` existed), so it
    /// would go with it even when the volumes stay; `None` when the person may not
    /// read it.
    pub secret_goes_with_it: Option<bool>,
    /// The workloads bound to it (`Deployment app`, by binding `app-db`); `None` when
    /// the person may not list bindings there.
    #[serde(default)]
    pub bindings: Option<Vec<(String, String)>>,
}

/// What a Stack may change to (its choice's versions and plans), and what a change of
/// version or plan would do: the difference in its workload, or why it is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackChangePreview {
    pub versions: Vec<String>,
    pub plans: Vec<String>,
    /// What the Stack asks for now (the catalog's defaults where it names none).
    pub version: Option<String>,
    pub plan: Option<String>,
    /// The version its workload runs, as status says.
    pub running: Option<String>,
    /// The workload's YAML, old against new; empty when nothing would change.
    pub diff: Vec<DiffLine>,
    /// Why the change would be refused (by the catalog or the API server's dry run).
    pub refused: Option<String>,
}

/// One line of a diff: `+` added, `-` removed, ` ` kept (context), `…` lines skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffLine {
    pub tag: char,
    pub text: String,
}

/// A Stack's volume claim; on the Provision page, one kept after its Stack was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataVolume {
    pub namespace: String,
    pub name: String,
    /// The Stack it belongs (or belonged) to.
    pub stack: String,
    /// Requested size, as the claim says it (`1Gi`).
    pub size: String,
    /// RFC 3339.
    pub created: Option<String>,
}

/// A workload a Stack can be bound to, as the binding picker offers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingTarget {
    /// `Deployment`, `StatefulSet` or `Stack` (a StackBinding's `spec.workload.kind`).
    pub kind: String,
    pub name: String,
    /// Why the person may not bind it (their rights); `None` when they may.
    pub refused: Option<String>,
    /// The binding of this Stack into it that already exists.
    pub bound_by: Option<String>,
}

/// What binding Stack `stack` offers the person: where its details can go, and the
/// variables a workload gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingOffer {
    pub targets: Vec<BindingTarget>,
    /// Each variable a bound workload gets, with what it holds (the password as where
    /// it is read from: it is never copied).
    pub variables: Vec<(String, String)>,
    /// Why nothing can be bound yet (the Stack is still being provisioned, the person
    /// may not read its password), in words.
    pub blocked: Option<String>,
}

/// A namespace the Provision form offers, with whether the person may create a Stack
/// in it (those they may come first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackPlace {
    pub namespace: String,
    pub may_create: bool,
}

/// One choice the Provision page offers, from the stack catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackOffer {
    pub choice: String,
    pub title: String,
    pub description: String,
    pub image: String,
    pub versions: Vec<String>,
    pub port: i32,
    pub stateful: bool,
    /// The sizes offered, smallest first.
    #[serde(default)]
    pub plans: Vec<PlanOffer>,
    /// The plan a Stack naming none gets.
    #[serde(default)]
    pub default_plan: Option<String>,
}

/// One size of a choice: what each instance requests, is limited to, and stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanOffer {
    pub name: String,
    pub description: String,
    pub storage: Option<String>,
    pub requests: Vec<(String, String)>,
    pub limits: Vec<(String, String)>,
}

/// What the create form of a CRD version is generated from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FormSpec {
    pub kind: String,
    pub api_version: String,
    pub namespaced: bool,
    /// The version's openAPIV3Schema as JSON (null when the CRD has none).
    pub schema: serde_json::Value,
    /// Every served version, the storage version first (for the version picker).
    pub versions: Vec<String>,
}

/// The result of submitting an object: created (or, for a dry run, accepted), or the
/// API server's refusal with its field causes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SubmitOutcome {
    Accepted {
        name: String,
        namespace: Option<String>,
    },
    Rejected(ApiRejection),
}
