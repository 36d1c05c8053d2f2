//! What the live views keep so that asking again costs nothing, bounded per person
//! and overall: the portal's recent answers to "does this namespace exist" with the
//! share of such lookups each person may cause ([`NamespaceAnswers`]), and people's
//! namespaces as their home page last found them ([`TheirNamespaces`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use portico_core::overview::Watched;

use crate::cluster::caller::Caller;

/// How long the portal's answer about a namespace is reused.
const NAMESPACE_ANSWER_TTL: std::time::Duration = std::time::Duration::from_secs(10);
/// Answers kept at most (the least used dropped first), and people counted for lookups.
const NAMESPACE_ANSWERS: usize = 4096;
/// Lookups made as the portal per person per second, and in a burst.
const PORTAL_LOOKUPS_PER_SECOND: u32 = 5;
const PORTAL_LOOKUP_BURST: u32 = 20;

/// The portal's recent answers to "does this namespace exist", and how many it may be
/// asked per person: subscribing names a namespace, and a person who may not read
/// Namespaces would otherwise make the portal ask the API server once per message.
pub struct NamespaceAnswers {
    /// Asked once at a time per namespace: others asking meanwhile wait for its answer.
    pub(in crate::live) answers: moka::future::Cache<String, bool>,
    lookups: governor::RateLimiter<
        String,
        governor::state::keyed::HashMapStateStore<String>,
        governor::clock::DefaultClock,
    >,
}

impl Default for NamespaceAnswers {
    fn default() -> Self {
        let per_second = std::num::NonZeroU32::new(PORTAL_LOOKUPS_PER_SECOND)
            .unwrap_or(std::num::NonZeroU32::MIN);
        let burst =
            std::num::NonZeroU32::new(PORTAL_LOOKUP_BURST).unwrap_or(std::num::NonZeroU32::MIN);
        Self {
            answers: moka::future::Cache::builder()
                .max_capacity(NAMESPACE_ANSWERS as u64)
                .time_to_live(NAMESPACE_ANSWER_TTL)
                .build(),
            lookups: governor::RateLimiter::hashmap(
                governor::Quota::per_second(per_second).allow_burst(burst),
            ),
        }
    }
}

impl NamespaceAnswers {
    /// Whether `person` may make the portal ask once more just now.
    pub(in crate::live) fn may_ask(&self, person: &str) -> bool {
        if self.lookups.len() >= NAMESPACE_ANSWERS {
            self.lookups.retain_recent();
        }
        self.lookups.check_key(&person.to_string()).is_ok()
    }
}

/// People's namespaces as last found, each kept for as long as an access answer is.
#[derive(Default)]
pub struct TheirNamespaces {
    found: Mutex<HashMap<(Caller, Vec<Watched>), Found>>,
}

/// Their namespaces, how many they may list, how many were asked about; and when.
type Found = ((Vec<String>, usize, usize), Instant);

/// People kept at most (beyond that, the oldest answers go first).
const KEPT: usize = 4096;

impl TheirNamespaces {
    /// `caller`'s namespaces for `kinds`, found by `find` unless found within `max_age`.
    pub(in crate::live) async fn of<F>(
        &self,
        caller: &Caller,
        kinds: &[Watched],
        max_age: Duration,
        find: impl FnOnce() -> F,
    ) -> (Vec<String>, usize, usize)
    where
        F: std::future::Future<Output = (Vec<String>, usize, usize)>,
    {
        let key = (caller.clone(), kinds.to_vec());
        if let Some((found, at)) = self.lock().get(&key)
            && at.elapsed() < max_age
        {
            return found.clone();
        }
        let found = find().await;
        let mut kept = self.lock();
        if kept.len() >= KEPT {
            kept.retain(|_, (_, at)| at.elapsed() < max_age);
        }
        if kept.len() < KEPT {
            kept.insert(key, (found.clone(), Instant::now()));
        }
        found
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Caller, Vec<Watched>), Found>> {
        self.found.lock().unwrap_or_else(|p| p.into_inner())
    }
}
