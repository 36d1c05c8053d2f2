//! What the reconciler reads, kept by watches instead of asked of the API server: a
//! reflector store per child kind, filled by the same watch that triggers reconciles,
//! and a record of what it last applied to each child so that an apply that would
//! change nothing is skipped.
//!
//! A child's watch triggers a reconcile only when something the reconciler reads of it
//! changed (`relevant`), or when it was deleted: a StatefulSet's status heartbeat, or
//! the echo of the reconciler's own apply, reconciles nothing.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::PredicateConfig;
use kube::runtime::{WatchStreamExt, reflector as reflect, watcher};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A hash of anything hashable (for predicates and applied records).
pub fn hash_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A hash of an object's JSON form: what the reconciler would send.
pub fn hash_json(value: &impl Serialize) -> u64 {
    hash_of(&serde_json::to_string(value).unwrap_or_default())
}

/// A kind a watch can keep in a store.
pub trait Watchable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static
{
}

impl<K> Watchable for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

/// A store of K (without managed fields and what `trim` removes) and the stream of
/// K's changes that matter: each object whose `relevant` hash changed since it was
/// last let through, and each deletion. Once the store is ready, it is updated before
/// the stream yields, so a reconcile the stream triggers reads the change it was
/// triggered by. (During a list the objects pass before the store swaps them in:
/// reconciles wait for the stores to be ready.)
pub fn watched<K>(
    api: Api<K>,
    config: watcher::Config,
    trim: impl Fn(&mut K) + Send + 'static,
    applied: Arc<Applied>,
) -> (
    Store<K>,
    impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
)
where
    K: Watchable + Relevant,
{
    let (store, writer) = reflector::store();
    let reader = store.clone();
    // Nothing reads managed fields (a thousand children's worth is most of the memory),
    // nor what `trim` takes away.
    let stream = watcher(api, config)
        .default_backoff()
        .modify(move |object: &mut K| {
            object.meta_mut().managed_fields = None;
            trim(object);
        });
    let changes = reflect(writer, stream).touched_objects().predicate_filter(
        move |object: &K| {
            Some(match reader.get(&ObjectRef::from_obj(object)) {
                Some(_) => object.relevant(),
                // Gone from the store: this was its deletion.
                None => hash_of(&("deleted", object.meta().resource_version.as_deref())),
            })
        },
        PredicateConfig::default(),
    );
    // The reconciler's own apply coming back tells it nothing it did not read in the
    // apply's answer: no reconcile for it.
    let present = store.clone();
    let changes = changes.filter(move |change| {
        let echo = change.as_ref().is_ok_and(|object| {
            // A deletion is never an echo.
            present.get(&ObjectRef::from_obj(object)).is_some()
                && ChildKey::of(object).is_some_and(|key| applied.is_echo(&key, object.relevant()))
        });
        std::future::ready(!echo)
    });
    (store, changes)
}

/// A store of the metadata of every K in `api`'s scope, whoever's it is, and the
/// future that keeps it filled (it runs until dropped). The reconciler's ownership
/// checks read it: an object under a child's name need not carry the Stack label, and
/// asking the API server about each name would be a request per child per Stack.
pub fn names<K>(
    api: Api<PartialObjectMeta<K>>,
) -> (
    Store<PartialObjectMeta<K>>,
    impl Future<Output = ()> + Send + 'static,
)
where
    K: Watchable,
{
    let (store, writer) = reflector::store();
    // An Api of PartialObjectMeta asks for metadata only.
    let stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|object: &mut PartialObjectMeta<K>| object.metadata.managed_fields = None);
    let fill = reflect(writer, stream).for_each(|_| std::future::ready(()));
    (store, fill)
}

/// The object named `name` in `namespace`, if the store holds it.
pub fn cached<K>(store: &Store<K>, namespace: &str, name: &str) -> Option<Arc<K>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope> + Clone,
{
    store.get(&ObjectRef::new(name).within(namespace))
}

/// Which state of a child an apply produced: which object it is (uid: one deleted and
/// made again under the same name starts at generation 1 too), its labels and
/// ownerReferences (edits to them leave the generation alone), and its generation where
/// it has one (status updates leave it alone), else its resourceVersion.
pub fn marker(object: &impl Resource) -> String {
    let meta = object.meta();
    let version = match meta.generation {
        Some(generation) => format!("g{generation}"),
        None => format!("rv{}", meta.resource_version.as_deref().unwrap_or_default()),
    };
    format!(
        "{}/{version}/{:x}",
        meta.uid.as_deref().unwrap_or_default(),
        hash_json(&(&meta.labels, &meta.owner_references))
    )
}

/// What a reconcile reads of an object: a watch event that leaves it unchanged
/// triggers nothing.
pub trait Relevant {
    fn relevant(&self) -> u64;
}

/// A child, for [`Applied`]: its kind, namespace, Stack and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChildKey {
    pub kind: String,
    pub namespace: String,
    pub stack: String,
    pub name: String,
}

impl ChildKey {
    /// The key of a watched child: its Stack is the one its label names.
    pub fn of<K: Resource<DynamicType = ()>>(object: &K) -> Option<Self> {
        let meta = object.meta();
        Some(Self {
            kind: K::kind(&()).into_owned(),
            namespace: meta.namespace.clone()?,
            stack: meta
                .labels
                .as_ref()?
                .get(super::desired::STACK_LABEL)?
                .clone(),
            name: meta.name.clone()?,
        })
    }
}

/// What the reconciler last applied to each child: the hash of what it sent, the
/// child's marker right after, and what it read of the answer ([`Relevant`]) until the
/// watch brings that state back.
#[derive(Default)]
pub struct Applied(Mutex<HashMap<ChildKey, Record>>);

struct Record {
    sent: u64,
    marker: String,
    echo: Echo,
}

/// What of a child's next watch event the reconciler already knows.
enum Echo {
    Nothing,
    /// An apply is under way (the watch often delivers a new object before the apply's
    /// answer arrives): what the watch showed meanwhile, last, is compared with the
    /// answer when it comes.
    Awaited {
        seen: Option<u64>,
    },
    /// The apply's answer, as read ([`Relevant`]).
    Answer(u64),
}

impl Applied {
    /// Whether applying `desired` (hash) again would change nothing: it was applied
    /// last, and the child has not changed since (`current` marker).
    pub fn unchanged(&self, key: &ChildKey, desired: u64, current: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .is_some_and(|r| r.sent == desired && r.marker == current)
    }

    /// Notes that an apply of `key` is under way, until the returned guard is finished
    /// with the apply's answer (or dropped: the apply failed or was cancelled, and the
    /// watch tells what happened).
    pub fn sending(&self, key: ChildKey) -> Sending<'_> {
        let mut records = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let awaited = Echo::Awaited { seen: None };
        match records.get_mut(&key) {
            Some(record) => record.echo = awaited,
            None => {
                let record = Record {
                    sent: 0,
                    marker: String::new(),
                    echo: awaited,
                };
                records.insert(key.clone(), record);
            }
        }
        Sending {
            applied: self,
            key: Some(key),
        }
    }

    /// Whether a watch event showing `key` as `read` tells the reconciler nothing: an
    /// apply of it is under way (the answer will be compared), or this is its answer
    /// coming back (once: the next such event is a change).
    pub fn is_echo(&self, key: &ChildKey, read: u64) -> bool {
        let mut records = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(record) = records.get_mut(key) else {
            return false;
        };
        match std::mem::replace(&mut record.echo, Echo::Nothing) {
            Echo::Nothing => false,
            Echo::Awaited { .. } => {
                record.echo = Echo::Awaited { seen: Some(read) };
                true
            }
            Echo::Answer(answer) => answer == read,
        }
    }

    /// Drops the records of Stacks that no longer exist (`exists(namespace, stack)`).
    pub fn retain_stacks(&self, exists: impl Fn(&str, &str) -> bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|key, _| exists(&key.namespace, &key.stack));
    }
}

/// An apply under way ([`Applied::sending`]).
pub struct Sending<'a> {
    applied: &'a Applied,
    key: Option<ChildKey>,
}

impl Sending<'_> {
    /// Records the apply of `desired` (hash) whose answer was `after` (marker) and read
    /// as `read` ([`Relevant`]). Returns whether the watch showed the child differently
    /// while the apply was under way: a change the answer may not include (a
    /// controller's status write just after the apply), so the caller looks again.
    pub fn answered(mut self, desired: u64, after: String, read: u64) -> bool {
        let Some(key) = self.key.take() else {
            return false;
        };
        let mut records = self.applied.0.lock().unwrap_or_else(|p| p.into_inner());
        let record = Record {
            sent: desired,
            marker: after,
            echo: Echo::Answer(read),
        };
        let before = records.insert(key, record);
        matches!(before, Some(Record { echo: Echo::Awaited { seen: Some(seen) }, .. }) if seen != read)
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take()
            && let Some(record) = self
                .applied
                .0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_mut(&key)
        {
            record.echo = Echo::Nothing;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apply_is_skipped_only_when_nothing_changed_on_either_side() {
        let applied = Applied::default();
        let key = ChildKey {
            kind: "Service".into(),
            namespace: "ns".into(),
            stack: "db".into(),
            name: "db-headless".into(),
        };
        assert!(!applied.unchanged(&key, 1, "rv5"), "never applied");
        let missed = applied.sending(key.clone()).answered(1, "rv5".into(), 7);
        assert!(!missed, "nothing shown meanwhile");
        assert!(applied.unchanged(&key, 1, "rv5"));
        assert!(
            !applied.unchanged(&key, 2, "rv5"),
            "the desired object changed"
        );
        assert!(
            !applied.unchanged(&key, 1, "rv6"),
            "someone changed the child"
        );
        assert!(
            !applied.is_echo(&key, 8),
            "a state the apply did not answer with"
        );
        assert!(
            !applied.is_echo(&key, 7),
            "only the first event after an apply"
        );

        let sending = applied.sending(key.clone());
        assert!(applied.is_echo(&key, 7), "while applying");
        assert!(
            !sending.answered(1, "rv5".into(), 7),
            "the answer was what the watch showed"
        );
        assert!(applied.is_echo(&key, 7), "the answer coming back");

        let sending = applied.sending(key.clone());
        assert!(applied.is_echo(&key, 9), "while applying");
        assert!(
            sending.answered(1, "rv5".into(), 7),
            "the watch showed a later state"
        );

        drop(applied.sending(key.clone()));
        assert!(
            !applied.is_echo(&key, 9),
            "after a failed or cancelled apply"
        );
        applied.retain_stacks(|_, _| false);
        assert!(
            !applied.unchanged(&key, 1, "rv5"),
            "forgotten with its Stack"
        );
    }
}
