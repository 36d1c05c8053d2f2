//! The palette's objects: every object a person may list, by name, read as them when
//! the palette opens and kept a short while ([`FRESH_FOR`]) so each keystroke only ranks
//! names in memory. Keystrokes that come while the names are being read wait for that
//! one read. Bounded: [`lists::MAX_OBJECTS`] names per person, [`KEPT`] people's names
//! at once, [`OPEN_READS_PER_MINUTE`] reads on opening per person.

pub mod lists;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

// Tokio's clock, which the tests can move.
use tokio::time::Instant;

use portico_core::find::{FoundObject, FoundObjects, MAX_QUERY_LEN, MAX_RESULTS, rank};
use portico_core::resource::ResourceKind;
use tokio::sync::OnceCell;

use lists::Names;

/// How long names read for a person answer their keystrokes before being read again
/// (an object made since shows up at most this late).
pub const FRESH_FOR: Duration = Duration::from_secs(20);
/// Reads made because the palette opened, per person per minute and in a burst: each
/// opening reads the names afresh (a person looking for what they just made finds it,
/// however recently the palette was open), and past this share the kept names answer.
pub const OPEN_READS_PER_MINUTE: u32 = 30;
pub const OPEN_READS_BURST: u32 = 10;
/// People whose names are kept at once; the one who typed longest ago goes first.
pub const KEPT: usize = 32;

type KeyedLimiter = governor::RateLimiter<
    String,
    governor::state::keyed::HashMapStateStore<String>,
    governor::clock::DefaultClock,
>;

/// The names kept, one read per token (whatever namespace it hinted last).
pub struct ObjectNames {
    kept: Mutex<HashMap<String, Kept>>,
    open_reads: KeyedLimiter,
}

impl Default for ObjectNames {
    fn default() -> Self {
        let per_minute =
            std::num::NonZeroU32::new(OPEN_READS_PER_MINUTE).unwrap_or(std::num::NonZeroU32::MIN);
        let burst =
            std::num::NonZeroU32::new(OPEN_READS_BURST).unwrap_or(std::num::NonZeroU32::MIN);
        Self {
            kept: Mutex::default(),
            open_reads: governor::RateLimiter::hashmap(
                governor::Quota::per_minute(per_minute).allow_burst(burst),
            ),
        }
    }
}

struct Kept {
    /// The namespace the read looked in for a person who may not list namespaces.
    hint: Option<String>,
    /// The names, and when their read ended.
    names: Arc<OnceCell<(Arc<Names>, Instant)>>,
    used_at: Instant,
}

impl Kept {
    /// Still answering: being read, or read within [`FRESH_FOR`].
    fn fresh(&self, now: Instant) -> bool {
        self.names
            .get()
            .is_none_or(|(_, read_at)| now.duration_since(*read_at) < FRESH_FOR)
    }
}

impl ObjectNames {
    /// `owner`'s names for `hint`, read by `read` unless read within [`FRESH_FOR`]
    /// (read again when `opened`, within the owner's share of such reads).
    async fn of<F>(
        &self,
        owner: String,
        hint: Option<String>,
        opened: bool,
        read: impl FnOnce() -> F,
    ) -> Arc<Names>
    where
        F: std::future::Future<Output = Names>,
    {
        let cell = {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            kept.retain(|_, k| k.fresh(now));
            // A read still under way started for this person's last keystrokes: shared.
            let read_again_on_open =
                |k: &Kept| opened && k.names.get().is_some() && self.may_read_on_open(&owner);
            if kept
                .get(&owner)
                .is_some_and(|k| k.hint != hint || read_again_on_open(k))
            {
                kept.remove(&owner);
            }
            if !kept.contains_key(&owner) && kept.len() >= KEPT {
                let oldest = kept
                    .iter()
                    .min_by_key(|(_, k)| k.used_at)
                    .map(|(key, _)| key.clone());
                if let Some(oldest) = oldest {
                    kept.remove(&oldest);
                }
            }
            let entry = kept.entry(owner).or_insert_with(|| Kept {
                hint,
                names: Arc::default(),
                used_at: now,
            });
            entry.used_at = now;
            entry.names.clone()
        };
        cell.get_or_init(|| async { (Arc::new(read().await), Instant::now()) })
            .await
            .0
            .clone()
    }
}

impl ObjectNames {
    /// Whether `owner` may have their names read again for opening the palette now.
    fn may_read_on_open(&self, owner: &str) -> bool {
        if self.open_reads.len() >= KEPT * 4 {
            self.open_reads.retain_recent();
        }
        self.open_reads.check_key(&owner.to_string()).is_ok()
    }
}

/// Whether `query` may be asked at all.
pub fn check_query(query: &str) -> Result<(), String> {
    if query.len() > MAX_QUERY_LEN {
        return Err(format!("a search is at most {MAX_QUERY_LEN} bytes"));
    }
    Ok(())
}

/// The objects `client`'s person may list that match `query`, best first.
pub async fn find(
    names: &ObjectNames,
    owner: String,
    client: &kube::Client,
    kinds: Vec<ResourceKind>,
    hint: Option<String>,
    query: &str,
    opened: bool,
) -> FoundObjects {
    if query.split_whitespace().next().is_none() {
        return FoundObjects::default();
    }
    let read = names
        .of(owner, hint.clone(), opened, || {
            lists::read(client, kinds, hint)
        })
        .await;
    ranked(&read, query)
}

/// The namespace a query asks for (its first `ns/` word), if it is a namespace's name.
pub fn asked_namespace(query: &str) -> Option<&str> {
    query
        .split_whitespace()
        .filter_map(|word| word.split_once('/'))
        .map(|(ns, _)| ns)
        .find(|ns| portico_core::resource::is_path_segment(ns))
}

/// The best [`MAX_RESULTS`] of `names` for `query`: by rank, then shorter names, then
/// alphabetically.
fn ranked(names: &Names, query: &str) -> FoundObjects {
    let mut matched: Vec<(u32, &lists::Named)> = names
        .objects
        .iter()
        .filter_map(|o| rank(query, o.namespace.as_deref(), &o.name).map(|r| (r, o)))
        .collect();
    let total = matched.len();
    // Compared in place: a one-letter query may match every name.
    let order = |(ra, a): &(u32, &lists::Named), (rb, b): &(u32, &lists::Named)| {
        (ra, a.name.len(), &a.name, &a.namespace).cmp(&(rb, b.name.len(), &b.name, &b.namespace))
    };
    if matched.len() > MAX_RESULTS {
        matched.select_nth_unstable_by(MAX_RESULTS - 1, order);
        matched.truncate(MAX_RESULTS);
    }
    matched.sort_by(order);
    FoundObjects {
        objects: matched
            .into_iter()
            .filter_map(|(_, o)| {
                let (resource, kind) = names.kinds.get(usize::from(o.kind))?;
                Some(FoundObject {
                    resource: resource.clone(),
                    kind: kind.clone(),
                    namespace: o.namespace.as_deref().map(str::to_string),
                    name: o.name.to_string(),
                })
            })
            .collect(),
        matched: total,
        looked_through: names.objects.len(),
        unseen: names.unseen.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portico_core::resource::ResourceRef;

    fn names(objects: &[(&str, &str)]) -> Names {
        Names {
            kinds: vec![(
                ResourceRef::new("apps", "v1", "deployments"),
                "Deployment".into(),
            )],
            objects: objects
                .iter()
                .map(|(ns, name)| lists::Named {
                    kind: 0,
                    namespace: Some(Arc::from(*ns)),
                    name: (*name).into(),
                })
                .collect(),
            unseen: vec![],
        }
    }

    #[test]
    fn the_best_come_first_and_at_most_a_page_of_them() {
        let many: Vec<(String, String)> = (0..200)
            .map(|i| ("b".to_string(), format!("web-{i}")))
            .collect();
        let mut all: Vec<(&str, &str)> =
            many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        all.push(("a", "web"));
        all.push(("a", "cobweb"));
        let found = ranked(&names(&all), "web");
        assert_eq!(found.matched, 202);
        assert_eq!(found.looked_through, 202);
        assert_eq!(found.objects.len(), MAX_RESULTS);
        assert_eq!(found.objects.first().map(|o| o.name.as_str()), Some("web"));
        assert_eq!(
            found.objects.first().map(|o| o.page_path()),
            Some("/r/apps/v1/deployments/a/web".to_string())
        );
        assert!(found.objects.iter().all(|o| o.name != "cobweb"));
    }

    #[test]
    fn a_long_query_is_refused() {
        assert!(check_query(&"a".repeat(MAX_QUERY_LEN)).is_ok());
        assert!(check_query(&"a".repeat(MAX_QUERY_LEN + 1)).is_err());
    }

    #[tokio::test]
    async fn keystrokes_share_one_read_until_it_is_stale() {
        let kept = ObjectNames::default();
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let read = || async {
            reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            names(&[("a", "web")])
        };
        let (one, two) = tokio::join!(
            kept.of("ada".into(), None, false, read),
            kept.of("ada".into(), None, false, read)
        );
        assert_eq!(one.objects.len(), two.objects.len());
        kept.of("bob".into(), None, false, read).await;
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 2);
        // Another namespace hinted replaces the token's names rather than adding more.
        kept.of("bob".into(), Some("team".into()), false, read)
            .await;
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 3);
        assert_eq!(kept.kept.lock().map(|k| k.len()).unwrap_or(0), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn each_opening_of_the_palette_reads_the_names_again_within_a_share() {
        let kept = ObjectNames::default();
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let read = || async {
            reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            names(&[("a", "web")])
        };
        let count = || reads.load(std::sync::atomic::Ordering::SeqCst);
        kept.of("ada".into(), None, true, read).await;
        assert_eq!(count(), 1);
        // Typing keeps the names read until they are FRESH_FOR old.
        kept.of("ada".into(), None, false, read).await;
        assert_eq!(count(), 1);
        // Opening again reads them afresh, however recent the last read.
        kept.of("ada".into(), None, true, read).await;
        assert_eq!(count(), 2);
        tokio::time::advance(FRESH_FOR).await;
        kept.of("ada".into(), None, false, read).await;
        assert_eq!(count(), 3);
        // Past the person's share of reads on opening, the kept names answer; another
        // person's share is their own. (The share refills over a minute of real time.)
        for _ in 0..OPEN_READS_BURST * 2 {
            kept.of("ada".into(), None, true, read).await;
        }
        let share = OPEN_READS_BURST as usize;
        assert!(count() >= 3 + share - 1 && count() < 3 + share * 2);
        let before_bob = count();
        kept.of("bob".into(), None, true, read).await;
        kept.of("bob".into(), None, true, read).await;
        assert_eq!(count(), before_bob + 2);
    }

    #[test]
    fn a_query_may_name_its_namespace() {
        assert_eq!(asked_namespace("team/web"), Some("team"));
        assert_eq!(asked_namespace("web ../x/y team-b/"), Some("team-b"));
        assert_eq!(asked_namespace("web"), None);
    }
}
