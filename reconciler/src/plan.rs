//! What one reconcile does to a Stack, decided from what the watches hold: the children
//! to apply, the children a changed choice left behind, and whether a Pod cannot be
//! placed; or why the Stack cannot be provisioned as it stands ([`Blocked`]). Pure: it
//! reads a [`World`] and writes nothing, so every outcome is tested without a cluster.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::catalog::{Catalog, CatalogEntry, ProbeSpec, version_order};
use super::containers::{self, Health};
use super::desired::{self, Children, ChildrenError, Workload};
use super::scheduling::{self, Placement};
use super::stack::Stack;
use super::status::Problem;

/// The kinds a Stack's children (and its StatefulSet's claims) are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    StatefulSet,
    Deployment,
    Service,
    Secret,
    PersistentVolumeClaim,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::StatefulSet => "StatefulSet",
            Kind::Deployment => "Deployment",
            Kind::Service => "Service",
            Kind::Secret => "Secret",
            Kind::PersistentVolumeClaim => "PersistentVolumeClaim",
        }
    }
}

/// What the watches hold, as a reconcile reads it.
pub trait World {
    /// The metadata of the object of `kind` named `name`, whoever's it is.
    fn meta(&self, kind: Kind, namespace: &str, name: &str) -> Option<ObjectMeta>;
    /// A StatefulSet carrying the Stack label (every child does).
    fn statefulset(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>>;
    /// The uid of the child of `kind` named `name` that carries the label of the Stack
    /// `(namespace, stack name, stack uid)` and that it controls, if there is one.
    fn child(&self, kind: Kind, name: &str, stack: (&str, &str, &str)) -> Option<Option<String>>;
    /// The Pods carrying the label of the Stack `(namespace, name)`.
    fn pods(&self, namespace: &str, stack: &str) -> Vec<Arc<Pod>>;
}

/// Why a Stack cannot be provisioned as it stands. Each is reported in status as
/// Degraded, with this text and [`Blocked::reason`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Blocked {
    #[error("The catalog offers no {choice:?}; it offers {offered}.")]
    UnknownChoice { choice: String, offered: String },
    #[error("{0}.")]
    ResourcesRefused(String),
    #[error("{0}")]
    UnknownVersion(ChildrenError),
    /// "Kind name" of an object under a child's name that is not this Stack's.
    #[error("{0} already exists and does not belong to this Stack; rename the Stack or remove it.")]
    NameConflict(String),
    /// The claim a deleted Stack of this name kept, not asked to be taken over.
    #[error(
        "PersistentVolumeClaim {0} holds the data a deleted Stack named like this one kept. To use it, set reattachKeptData (it needs permission to delete persistentvolumeclaims here); otherwise rename the Stack, or remove the claim."
    )]
    KeptData(String),
    #[error("{0}")]
    UnknownPlan(ChildrenError),
    #[error(
        "{choice} {running} cannot go back to {asked}: the catalog does not allow downgrading {choice} (its data, once upgraded, cannot be read by the older version). Set version back to {running}; {running} keeps running meanwhile."
    )]
    DowngradeRefused {
        choice: String,
        running: String,
        asked: String,
    },
}

impl Blocked {
    /// Every [`Blocked::reason`].
    pub const REASONS: [&'static str; 7] = [
        "UnknownChoice",
        "ResourcesRefused",
        "UnknownVersion",
        "NameConflict",
        "KeptData",
        "UnknownPlan",
        "DowngradeRefused",
    ];

    /// The condition reason status shows.
    pub fn reason(&self) -> &'static str {
        match self {
            Blocked::UnknownChoice { .. } => "UnknownChoice",
            Blocked::ResourcesRefused(_) => "ResourcesRefused",
            Blocked::UnknownVersion(_) => "UnknownVersion",
            Blocked::NameConflict(_) => "NameConflict",
            Blocked::KeptData(_) => "KeptData",
            Blocked::UnknownPlan(_) => "UnknownPlan",
            Blocked::DowngradeRefused { .. } => "DowngradeRefused",
        }
    }

    /// Whether only a change of the Stack or the catalog can unblock it. A name
    /// conflict can also end by someone removing their object, which no watch of the
    /// Stack sees: it is looked at again after a while.
    pub fn awaits_change(&self) -> bool {
        !matches!(self, Blocked::NameConflict(_) | Blocked::KeptData(_))
    }
}

/// A child to delete: only the object with this uid (never one made since under the
/// same name).
#[derive(Debug, Clone, PartialEq)]
pub struct Stale {
    pub kind: Kind,
    pub name: String,
    pub uid: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The catalog entry the plan was made from (carried out with it, not with a
    /// newer catalog's): the endpoint and the version status reports come from it.
    pub entry: CatalogEntry,
    /// Applied in this order: the Secret and the Services before the workload that
    /// reads the one and is reached through the others.
    pub children: Children,
    pub stale: Vec<Stale>,
    /// The Stack's credentials Secret is to be deleted (its new choice has none).
    pub stale_credentials: bool,
    /// A Pod of this Stack the scheduler has not placed for [`scheduling::GRACE`], in
    /// its words; else what its containers show ([`containers::health`]).
    pub unplaceable: Option<Problem>,
    /// When to look again: a Pod is unplaced, or a container unready, but not for its
    /// grace period yet.
    pub look_again_in: Option<std::time::Duration>,
}

/// The plan for `stack` at `now`, or why there is none. `passwords` fill the
/// credentials Secret, which is only ever created: the reconciler never reads Secrets,
/// so an existing one keeps the passwords the database was started with.
pub fn plan(
    stack: &Stack,
    catalog: &Catalog,
    world: &impl World,
    (passwords, now): (desired::Passwords, Timestamp),
) -> Result<Option<Plan>, Blocked> {
    let (Some(name), Some(namespace), Some(uid)) = (
        stack.metadata.name.as_deref(),
        stack.metadata.namespace.as_deref(),
        stack.metadata.uid.as_deref(),
    ) else {
        // Never so for an object the API server has stored.
        return Ok(None);
    };
    let entry = admitted_entry(stack, catalog)?;
    let mut desired = match desired::desired(stack, entry, passwords) {
        Ok(desired) => desired,
        Err(ChildrenError::Incomplete) => return Ok(None),
        Err(error @ ChildrenError::UnknownPlan { .. }) => return Err(Blocked::UnknownPlan(error)),
        Err(error) => return Err(Blocked::UnknownVersion(error)),
    };
    let wanted = wanted(&desired);
    refuse_foreign_objects(stack, world, (namespace, uid), &desired.workload, &wanted)?;
    // The running StatefulSet (ours, by the checks above): no going back where the
    // catalog forbids it, and its volumes keep their size.
    if let Workload::Stateful(set) = &mut desired.workload
        && let Some(running) = world.statefulset(namespace, name)
    {
        refuse_downgrade(stack, entry, &running)?;
        keep_volume_size(set, &running);
    }
    let stale = stale_children(world, (namespace, name, uid), &wanted);
    let (unplaceable, look_again_in) = pod_trouble(world, (namespace, name), entry, now);
    // Status names the credentials Secret once it was made; a choice without one
    // leaves it behind, unless the Stack keeps its data: its volumes stay too (the
    // StatefulSet's claims are retained), and the password is what opens them.
    let stale_credentials = desired.secret.is_none()
        && !stack.spec.deletion_policy.keeps_data()
        && stack
            .status
            .as_ref()
            .is_some_and(|s| s.credentials_secret.is_some());
    Ok(Some(Plan {
        entry: entry.clone(),
        children: desired,
        stale,
        stale_credentials,
        unplaceable,
        look_again_in,
    }))
}

/// The catalog entry `stack` chose, once what it asks for is within what the entry
/// allows.
fn admitted_entry<'c>(stack: &Stack, catalog: &'c Catalog) -> Result<&'c CatalogEntry, Blocked> {
    let Some(entry) = catalog.get(&stack.spec.choice) else {
        return Err(Blocked::UnknownChoice {
            choice: stack.spec.choice.clone(),
            offered: catalog
                .entries
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    // Whoever may create a Stack gets its children made for them: only compute, and
    // only as much as the catalog allows, or someone could take the cluster's GPUs.
    if let Some(asked) = &stack.spec.resources {
        entry
            .check_resources(&asked.requests, &asked.limits)
            .map_err(|refused| Blocked::ResourcesRefused(refused.to_string()))?;
    }
    // Nor more instances or bigger volumes than it allows: each claim stays after a
    // scale-down, made by the StatefulSet controller on the author's behalf.
    entry
        .check_scale(stack.spec.replicas, stack.spec.storage.as_deref())
        .map_err(|refused| Blocked::ResourcesRefused(refused.to_string()))?;
    Ok(entry)
}

/// Refuses the `wanted` children whose names an object not controlled by the Stack
/// with `uid` holds, and the claims its StatefulSet `workload` would adopt but did not
/// make (a kept one only when the Stack does not ask to reattach it).
fn refuse_foreign_objects(
    stack: &Stack,
    world: &impl World,
    (namespace, uid): (&str, &str),
    workload: &Workload,
    wanted: &[(Kind, String)],
) -> Result<(), Blocked> {
    // Never take over an object that exists under a child's name but is not this
    // Stack's: that would repoint or, on deletion, remove someone else's object.
    let taken = |(kind, child): &(Kind, String)| {
        world
            .meta(*kind, namespace, child)
            .is_some_and(|meta| !controlled_by(&meta, uid))
    };
    if let Some((kind, child)) = wanted.iter().find(|w| taken(w)) {
        return Err(Blocked::NameConflict(format!("{} {child}", kind.name())));
    }
    if let Workload::Stateful(set) = workload {
        match foreign_claim(world, namespace, set, stack.spec.replicas) {
            Some(Foreign::Kept(claim)) if !stack.spec.reattach_kept_data => {
                return Err(Blocked::KeptData(claim));
            }
            Some(Foreign::Kept(_)) | None => {}
            Some(Foreign::Someones(claim)) => {
                return Err(Blocked::NameConflict(format!(
                    "{} {claim}",
                    Kind::PersistentVolumeClaim.name()
                )));
            }
        }
    }
    Ok(())
}

/// The children of the Stack `(namespace, name, uid)` that it controls but that are
/// not `wanted` any more, each to be deleted by its uid.
fn stale_children(
    world: &impl World,
    (namespace, name, uid): (&str, &str, &str),
    wanted: &[(Kind, String)],
) -> Vec<Stale> {
    // What a changed choice left behind, looked up by the names any choice gives them
    // (not by scanning every object). A credentials Secret is not watched:
    // [`Plan::stale_credentials`] says to delete it.
    [
        (Kind::StatefulSet, name.to_string()),
        (Kind::Deployment, name.to_string()),
        (Kind::Service, name.to_string()),
        (Kind::Service, desired::headless_name(name)),
    ]
    .into_iter()
    .filter(|candidate| !wanted.contains(candidate))
    .filter_map(|(kind, child)| {
        let uid = world.child(kind, &child, (namespace, name, uid))?;
        Some(Stale {
            kind,
            name: child,
            uid,
        })
    })
    .collect()
}

/// What the Pods of the Stack `(namespace, name)` show at `now`: the first problem
/// ([`Plan::unplaceable`]) and when to look again ([`Plan::look_again_in`]).
fn pod_trouble(
    world: &impl World,
    (namespace, name): (&str, &str),
    entry: &CatalogEntry,
    now: Timestamp,
) -> (Option<Problem>, Option<std::time::Duration>) {
    let pods = world.pods(namespace, name);
    let (unplaceable, placement_again) =
        match scheduling::placement(pods.iter().map(Arc::as_ref), now) {
            Placement::Placed => (None, None),
            Placement::Waiting(left) => (None, Some(left)),
            Placement::Stuck(message) => {
                let reason = scheduling::REASON.into();
                (Some(Problem { reason, message }), None)
            }
        };
    // Placed Pods that do not serve: the scheduler's word comes first (a Pod it
    // cannot place has no containers to speak of).
    let probe = entry
        .readiness
        .as_ref()
        .map(ProbeSpec::describe)
        .unwrap_or_else(|| "none".into());
    let (unplaceable, health_again) = match unplaceable {
        Some(problem) => (Some(problem), None),
        None => match containers::health(pods.iter().map(Arc::as_ref), now, &probe) {
            Health::Fine => (None, None),
            Health::Waiting(left) => (None, Some(left)),
            Health::Troubled(reason, message) => (
                Some(Problem {
                    reason: reason.into(),
                    message,
                }),
                None,
            ),
        },
    };
    let look_again_in = match (placement_again, health_again) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    (unplaceable, look_again_in)
}

/// An older version than the StatefulSet runs, where the catalog forbids going back.
fn refuse_downgrade(
    stack: &Stack,
    entry: &CatalogEntry,
    running: &StatefulSet,
) -> Result<(), Blocked> {
    if entry.allow_downgrade {
        return Ok(());
    }
    let image_of = |set: &StatefulSet| {
        set.spec
            .as_ref()?
            .template
            .spec
            .as_ref()?
            .containers
            .first()?
            .image
            .clone()
    };
    let running = image_of(running).and_then(|image| entry.version_of(&image).map(str::to_string));
    let asked = entry
        .image_for(stack.spec.version.as_deref())
        .and_then(|image| entry.version_of(image));
    match (running, asked) {
        (Some(running), Some(asked))
            if version_order(asked, &running) == std::cmp::Ordering::Less =>
        {
            Err(Blocked::DowngradeRefused {
                choice: stack.spec.choice.clone(),
                running,
                asked: asked.to_string(),
            })
        }
        _ => Ok(()),
    }
}

/// A claim's size is fixed once the StatefulSet has made its template (the API server
/// refuses a change to it): a new plan or storage changes the Pods' resources, and the
/// volumes stay as they are.
fn keep_volume_size(desired: &mut StatefulSet, running: &StatefulSet) {
    let size_of = |set: &StatefulSet| {
        set.spec
            .as_ref()?
            .volume_claim_templates
            .as_ref()?
            .first()?
            .spec
            .as_ref()?
            .resources
            .as_ref()?
            .requests
            .as_ref()?
            .get("storage")
            .cloned()
    };
    let Some(size) = size_of(running) else {
        return;
    };
    let request = desired
        .spec
        .as_mut()
        .and_then(|s| s.volume_claim_templates.as_mut())
        .and_then(|t| t.first_mut())
        .and_then(|c| c.spec.as_mut())
        .and_then(|s| s.resources.as_mut())
        .and_then(|r| r.requests.as_mut());
    if let Some(requests) = request {
        requests.insert("storage".into(), size);
    }
}

/// `(kind, name)` of every child in `desired`.
fn wanted(desired: &Children) -> Vec<(Kind, String)> {
    let mut wanted = vec![match &desired.workload {
        Workload::Stateful(set) => (Kind::StatefulSet, set.name_any()),
        Workload::Stateless(deployment) => (Kind::Deployment, deployment.name_any()),
    }];
    wanted.extend(
        desired
            .headless
            .iter()
            .chain([&desired.service])
            .map(|s| (Kind::Service, s.name_any())),
    );
    wanted.extend(desired.secret.iter().map(|s| (Kind::Secret, s.name_any())));
    wanted
}

/// Whether `meta`'s controller is the object with `uid`.
pub fn controlled_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.uid == uid)
}

/// Whether `claim` is one a Stack named `stack` kept when it was deleted (deletionPolicy
/// Retain): made by a StatefulSet from the Stack's claim template (so labelled with the
/// Stack's name) and owned by nothing any more. A Stack made again under that name
/// reattaches it, with the kept credentials Secret that opens it.
fn kept_for(claim: &ObjectMeta, stack: &str) -> bool {
    claim.owner_references.as_ref().is_none_or(Vec::is_empty)
        && claim
            .labels
            .as_ref()
            .and_then(|l| l.get(desired::STACK_LABEL))
            .is_some_and(|s| s == stack)
}

/// Whether `meta` was made at or after `since` (false when either time is unknown).
fn made_since(
    meta: &ObjectMeta,
    since: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
) -> bool {
    since.is_some_and(|since| {
        meta.creation_timestamp
            .as_ref()
            .is_some_and(|made| made.0 >= since.0)
    })
}

/// A claim under a child's name that the StatefulSet did not make.
#[derive(Debug, PartialEq)]
enum Foreign {
    /// Kept from a deleted Stack of the same name: taken over only when asked.
    Kept(String),
    /// Anyone else's: never taken over.
    Someones(String),
}

/// A claim the StatefulSet `desired` would adopt although it did not make it: one that
/// exists before the StatefulSet, or is not owned by it. A claim planted
/// under a child's name would otherwise hand the stack someone else's volume (and its
/// data). Claims are looked at only when the StatefulSet is new or grows: that is when
/// it would adopt one.
fn foreign_claim(
    world: &impl World,
    namespace: &str,
    desired: &StatefulSet,
    replicas: i32,
) -> Option<Foreign> {
    let name = desired.name_any();
    let set = world.statefulset(namespace, &name);
    // Ours by the name check before; without the Stack label (removed by hand) only its
    // metadata is known, and it counts as growing: its claims are checked by owner.
    let set_meta = match &set {
        Some(set) => Some(set.metadata.clone()),
        None => world.meta(Kind::StatefulSet, namespace, &name),
    };
    let set_uid = set_meta.as_ref().and_then(|meta| meta.uid.clone());
    let set_created = set_meta.and_then(|meta| meta.creation_timestamp);
    let grows = set
        .as_ref()
        .and_then(|s| s.spec.as_ref())
        .and_then(|s| s.replicas)
        .is_none_or(|now| now < replicas);
    if !grows {
        return None;
    }
    // A StatefulSet made before claims were owned (no Delete retention policy yet):
    // its claims carry no owner until the policy is applied, so a claim made after
    // the set counts as the set's. The next apply brings the policy and the owners.
    let unowned_since = set
        .as_ref()
        .filter(|s| {
            s.spec
                .as_ref()
                .and_then(|spec| spec.persistent_volume_claim_retention_policy.as_ref())
                .and_then(|p| p.when_deleted.as_deref())
                != Some("Delete")
        })
        .and_then(|s| s.metadata.creation_timestamp.clone());
    (0..replicas.max(0))
        .map(|ordinal| desired::claim_name(&name, ordinal))
        .find_map(|claim| {
            let existing = world.meta(Kind::PersistentVolumeClaim, namespace, &claim)?;
            let owned = set_uid.as_deref().is_some_and(|uid| {
                existing
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid)
            });
            let made_after_legacy_set = made_since(&existing, unowned_since.as_ref());
            if owned || made_after_legacy_set {
                None
            } else if kept_for(&existing, &name) {
                // A StatefulSet that keeps its claims (Retain) does not own them: its
                // own are those made since it exists. One older than it (or with no
                // StatefulSet yet) was kept from a Stack deleted before.
                (!made_since(&existing, set_created.as_ref())).then_some(Foreign::Kept(claim))
            } else {
                Some(Foreign::Someones(claim))
            }
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;
    use crate::catalog::DEFAULT_CATALOG;
    use crate::stack::StackSpec;

    /// A world of objects given by hand: metadata by (kind, name), the labelled
    /// StatefulSets, this Stack's children, its Pods.
    #[derive(Default)]
    struct Given {
        meta: HashMap<(Kind, String), ObjectMeta>,
        sets: Vec<Arc<StatefulSet>>,
        pods: Vec<Arc<Pod>>,
    }

    impl World for Given {
        fn meta(&self, kind: Kind, _: &str, name: &str) -> Option<ObjectMeta> {
            self.meta.get(&(kind, name.to_string())).cloned()
        }
        fn statefulset(&self, _: &str, name: &str) -> Option<Arc<StatefulSet>> {
            self.sets.iter().find(|s| s.name_any() == name).cloned()
        }
        fn child(
            &self,
            kind: Kind,
            name: &str,
            (_, _, uid): (&str, &str, &str),
        ) -> Option<Option<String>> {
            let meta = self.meta.get(&(kind, name.to_string()))?;
            controlled_by(meta, uid).then(|| meta.uid.clone())
        }
        fn pods(&self, _: &str, _: &str) -> Vec<Arc<Pod>> {
            self.pods.clone()
        }
    }

    impl Given {
        fn with(mut self, kind: Kind, name: &str, controller: Option<&str>) -> Self {
            let meta = ObjectMeta {
                name: Some(name.into()),
                uid: Some(format!("uid-of-{name}")),
                owner_references: controller.map(|uid| {
                    vec![OwnerReference {
                        controller: Some(true),
                        uid: uid.into(),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            };
            self.meta.insert((kind, name.into()), meta);
            self
        }
    }

    fn stack(choice: &str) -> Stack {
        Stack {
            metadata: ObjectMeta {
                name: Some("shop".into()),
                namespace: Some("team".into()),
                uid: Some("stack-uid".into()),
                generation: Some(1),
                ..Default::default()
            },
            spec: StackSpec {
                choice: choice.into(),
                replicas: 1,
                exposure: "ClusterIP".into(),
                ..Default::default()
            },
            status: None,
        }
    }

    fn password_of(secret: &Secret) -> Option<String> {
        let bytes = secret.data.as_ref()?.get(desired::PASSWORD_KEY)?;
        Some(String::from_utf8_lossy(&bytes.0).into_owned())
    }

    /// The plan for `stack` in `world` (a new Secret's password: "fresh"), which must be
    /// neither blocked nor incomplete.
    fn planned(stack: &Stack, world: &Given) -> Plan {
        plan(
            stack,
            &catalog(),
            world,
            (desired::Passwords::placeholder("fresh"), Timestamp::now()),
        )
        .expect("not blocked")
        .expect("complete")
    }

    /// A plan's passwords (a placeholder: no Secret is made) and time, now.
    fn now() -> (desired::Passwords<'static>, Timestamp) {
        (desired::Passwords::placeholder("p"), Timestamp::now())
    }

    fn catalog() -> Catalog {
        Catalog::parse(DEFAULT_CATALOG).expect("the shipped catalog parses")
    }

    #[test]
    fn a_new_stack_gets_every_child_and_deletes_nothing() {
        let plan = planned(&stack("mysql"), &Given::default());
        assert!(matches!(plan.children.workload, Workload::Stateful(_)));
        assert!(plan.children.secret.is_some() && plan.children.headless.is_some());
        assert_eq!(plan.stale, []);
        assert_eq!(plan.unplaceable, None);
        let secret = plan.children.secret.expect("a Secret");
        assert_eq!(
            password_of(&secret),
            Some("fresh".into()),
            "a new Secret gets the fresh password"
        );
    }

    #[test]
    fn credentials_are_left_behind_only_by_a_choice_without_them_once_made() {
        use crate::stack::DeletionPolicy;
        let with_status = |choice: &str, made: bool, policy: DeletionPolicy| {
            let mut stack = stack(choice);
            stack.spec.deletion_policy = policy;
            stack.status = Some(crate::stack::StackStatus {
                credentials_secret: made.then(|| desired::secret_name("shop")),
                ..Default::default()
            });
            planned(&stack, &Given::default()).stale_credentials
        };
        assert!(with_status("tomcat", true, DeletionPolicy::Delete));
        assert!(!with_status("tomcat", false, DeletionPolicy::Delete));
        assert!(!with_status("mysql", true, DeletionPolicy::Delete));
        // A Stack that keeps its data keeps the password to its kept volumes.
        assert!(!with_status("tomcat", true, DeletionPolicy::Retain));
    }

    #[test]
    fn an_object_under_a_child_name_that_is_not_ours_blocks_with_its_kind_and_name() {
        for owner in [None, Some("another-stack")] {
            let world = Given::default().with(Kind::Service, "shop", owner);
            assert_eq!(
                plan(&stack("tomcat"), &catalog(), &world, now()),
                Err(Blocked::NameConflict("Service shop".into()))
            );
        }
        let ours = Given::default().with(Kind::Service, "shop", Some("stack-uid"));
        assert!(plan(&stack("tomcat"), &catalog(), &ours, now()).is_ok());
    }

    #[test]
    fn a_claim_the_statefulset_did_not_make_blocks_a_new_statefulset() {
        let claim = desired::claim_name("shop", 0);
        let world = Given::default().with(Kind::PersistentVolumeClaim, &claim, None);
        assert_eq!(
            plan(&stack("mysql"), &catalog(), &world, now()),
            Err(Blocked::NameConflict(format!(
                "PersistentVolumeClaim {claim}"
            )))
        );
    }

    #[test]
    fn a_claim_kept_from_a_stack_of_the_same_name_is_reattached_only_when_asked_and_no_other() {
        let claim = desired::claim_name("shop", 0);
        let kept = |stack: &str, owner: Option<&str>| ObjectMeta {
            name: Some(claim.clone()),
            labels: Some([(desired::STACK_LABEL.to_string(), stack.to_string())].into()),
            owner_references: owner.map(|uid| {
                vec![OwnerReference {
                    uid: uid.into(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        };
        let with = |meta: ObjectMeta| {
            let mut world = Given::default();
            world
                .meta
                .insert((Kind::PersistentVolumeClaim, claim.clone()), meta);
            world
        };
        let now = now();
        // Only when asked: the data is someone's.
        assert_eq!(
            plan(&stack("mysql"), &catalog(), &with(kept("shop", None)), now),
            Err(Blocked::KeptData(claim.clone()))
        );
        let mut asking = stack("mysql");
        asking.spec.reattach_kept_data = true;
        assert!(plan(&asking, &catalog(), &with(kept("shop", None)), now).is_ok());
        let conflict = Err(Blocked::NameConflict(format!(
            "PersistentVolumeClaim {claim}"
        )));
        // Another Stack's label, or a claim someone else's StatefulSet still owns.
        assert_eq!(
            plan(&asking, &catalog(), &with(kept("other", None)), now),
            conflict
        );
        assert_eq!(
            plan(
                &asking,
                &catalog(),
                &with(kept("shop", Some("someone-elses-set"))),
                now
            ),
            conflict
        );
    }

    #[test]
    fn a_statefulset_known_only_by_its_metadata_keeps_its_own_claims() {
        // Its Stack label removed by hand: the labelled watch lacks it.
        let claim = desired::claim_name("shop", 0);
        let mut world = Given::default().with(Kind::StatefulSet, "shop", Some("stack-uid"));
        let owned_by_the_set = ObjectMeta {
            name: Some(claim.clone()),
            owner_references: Some(vec![OwnerReference {
                uid: "uid-of-shop".into(),
                ..Default::default()
            }]),
            ..Default::default()
        };
        world
            .meta
            .insert((Kind::PersistentVolumeClaim, claim), owned_by_the_set);
        assert!(plan(&stack("mysql"), &catalog(), &world, now()).is_ok());
    }

    #[test]
    fn a_retaining_statefulsets_own_claims_are_its_own_and_older_ones_were_kept() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        // Known by its metadata only (its Stack label removed by hand), made at t=100.
        let at = |seconds: i64| Some(Time(Timestamp::from_second(seconds).expect("time")));
        let mut world = Given::default().with(Kind::StatefulSet, "shop", Some("stack-uid"));
        if let Some(set) = world.meta.get_mut(&(Kind::StatefulSet, "shop".to_string())) {
            set.creation_timestamp = at(100);
        }
        let claim = desired::claim_name("shop", 0);
        let unowned = |made: i64| ObjectMeta {
            name: Some(claim.clone()),
            labels: Some([(desired::STACK_LABEL.to_string(), "shop".to_string())].into()),
            creation_timestamp: at(made),
            ..Default::default()
        };
        let now = now();
        world
            .meta
            .insert((Kind::PersistentVolumeClaim, claim.clone()), unowned(160));
        assert!(plan(&stack("mysql"), &catalog(), &world, now).is_ok());
        world
            .meta
            .insert((Kind::PersistentVolumeClaim, claim.clone()), unowned(40));
        assert_eq!(
            plan(&stack("mysql"), &catalog(), &world, now),
            Err(Blocked::KeptData(claim))
        );
    }

    #[test]
    fn a_changed_choice_deletes_the_children_the_new_one_lacks() {
        let world = Given::default()
            .with(Kind::StatefulSet, "shop", Some("stack-uid"))
            .with(Kind::Service, "shop", Some("stack-uid"))
            .with(
                Kind::Service,
                &desired::headless_name("shop"),
                Some("stack-uid"),
            )
            .with(Kind::Deployment, "unrelated", Some("another-stack"));
        let plan = planned(&stack("tomcat"), &world);
        let mut stale: Vec<_> = plan
            .stale
            .iter()
            .map(|s| (s.kind, s.name.as_str()))
            .collect();
        stale.sort_by_key(|(kind, name)| (kind.name(), *name));
        assert_eq!(
            stale,
            [
                (Kind::Service, desired::headless_name("shop").as_str()),
                (Kind::StatefulSet, "shop"),
            ]
        );
        assert_eq!(
            plan.stale[0]
                .uid
                .as_deref()
                .map(|u| u.starts_with("uid-of-")),
            Some(true)
        );
    }

    #[test]
    fn unknown_choices_versions_and_refused_resources_are_blocked_and_await_a_change() {
        let unknown = plan(&stack("oracle"), &catalog(), &Given::default(), now());
        let Err(blocked @ Blocked::UnknownChoice { .. }) = unknown else {
            panic!("{unknown:?}");
        };
        assert!(blocked.to_string().contains("offers no \"oracle\""));
        assert!(blocked.awaits_change());

        let mut old = stack("mysql");
        old.spec.version = Some("3.23".into());
        let version = plan(&old, &catalog(), &Given::default(), now());
        assert!(
            matches!(&version, Err(b) if b.reason() == "UnknownVersion"),
            "{version:?}"
        );

        let mut greedy = stack("tomcat");
        greedy.spec.resources = Some(crate::stack::StackResources {
            requests: [("nvidia.com/gpu".to_string(), serde_json::json!(1))].into(),
            limits: Default::default(),
        });
        let refused = plan(&greedy, &catalog(), &Given::default(), now());
        assert!(
            matches!(&refused, Err(b) if b.reason() == "ResourcesRefused"),
            "{refused:?}"
        );

        assert!(!Blocked::NameConflict("Service x".into()).awaits_change());
    }

    #[test]
    fn an_unschedulable_pod_is_reported_in_the_schedulers_words() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "shop-0"},
            "status": {"phase": "Pending", "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 Insufficient cpu."
            }]}
        }))
        .expect("a Pod");
        let world = Given {
            pods: vec![Arc::new(pod)],
            ..Default::default()
        };
        let plan = planned(&stack("tomcat"), &world);
        let problem = plan.unplaceable.expect("unplaceable");
        assert_eq!(problem.reason, "Unschedulable");
        assert!(
            problem.message.contains("Insufficient cpu"),
            "{}",
            problem.message
        );
    }
}
