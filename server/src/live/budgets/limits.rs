//! Bounds on live views, so one person (or a script holding their credentials) cannot
//! make Portico hold unbounded connections or upstream watches: open streams per
//! identity and overall, upstream feeds per identity and overall, and how stale a
//! stream's permission may get before it is asked again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;

/// The bounds. Defaults suit a team portal: a tab on an object page holds four streams
/// and (children) one feed per namespaced kind.
#[derive(Debug, Clone)]
pub struct LiveLimits {
    /// Live streams one identity may hold open at once.
    pub streams_per_person: usize,
    /// Live streams open at once, everyone together.
    pub streams_overall: usize,
    /// Live sockets (one per tab) one identity may hold open, and all together.
    pub sockets_per_person: usize,
    pub sockets_overall: usize,
    /// Terminals into containers one identity may hold open, and all together.
    pub terminals_per_person: usize,
    pub terminals_overall: usize,
    /// How long a terminal may go without a keystroke before it is closed.
    pub terminal_idle: Duration,
    /// Home pages (overviews: each a feed per kind and namespace read) one identity
    /// may hold open at once, and all together.
    pub overviews_per_person: usize,
    pub overviews_overall: usize,
    /// Upstream feeds (LIST+WATCH) running for one identity, lingering ones included.
    pub feeds_per_person: usize,
    /// Upstream feeds running, everyone together.
    pub feeds_overall: usize,
    /// Bytes of live tables (rows and recent changes) kept for one identity's feeds,
    /// lingering ones included, and for everyone's.
    pub bytes_per_person: usize,
    pub bytes_overall: usize,
    /// Kinds one children view looks in (each a feed): built-in kinds first, then
    /// the CRDs nearest the owner's group.
    pub child_kinds: usize,
    /// How often an open stream asks again whether its viewer may still watch; a
    /// revoked permission ends the stream with a `problem` message.
    pub recheck: Duration,
}

impl Default for LiveLimits {
    fn default() -> Self {
        Self {
            streams_per_person: 64,
            streams_overall: 4096,
            sockets_per_person: 32,
            sockets_overall: 4096,
            terminals_per_person: 8,
            terminals_overall: 512,
            terminal_idle: Duration::from_secs(30 * 60),
            overviews_per_person: 4,
            overviews_overall: 1024,
            feeds_per_person: 512,
            feeds_overall: 20_000,
            child_kinds: 64,
            // Within the Deployment's 512 MiB limit, with room for what is being sent.
            bytes_per_person: 64 << 20,
            bytes_overall: 256 << 20,
            recheck: Duration::from_secs(30),
        }
    }
}

/// Why a live view was refused; the text is shown to the person.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, strum::IntoStaticStr)]
pub enum LimitRefused {
    #[error(
        "You have {0} live views open in Portico, the most one person may: close some tabs or views and try again."
    )]
    StreamsPerPerson(usize),
    #[error("Portico is serving the most live views it may ({0}): try again shortly.")]
    StreamsOverall(usize),
    #[error(
        "Portico is already watching {0} different lists for you, the most one person may: close some views, or wait a minute for idle ones to stop."
    )]
    FeedsPerPerson(usize),
    #[error("Portico is watching the most lists it may ({0}): try again shortly.")]
    FeedsOverall(usize),
    #[error(
        "You have {0} Portico tabs with live connections open, the most one person may: close some tabs."
    )]
    SocketsPerPerson(usize),
    #[error("Portico holds the most live connections it may ({0}): try again shortly.")]
    SocketsOverall(usize),
    #[error(
        "You have {0} terminals open in Portico, the most one person may: close one and try again."
    )]
    TerminalsPerPerson(usize),
    #[error("Portico holds the most terminals it may ({0}): try again shortly.")]
    TerminalsOverall(usize),
    #[error(
        "You have {0} home pages open in Portico, the most one person may: close one (each follows every namespace you read)."
    )]
    OverviewsPerPerson(usize),
    #[error("Portico serves the most home pages it may ({0}): try again shortly.")]
    OverviewsOverall(usize),
    #[error(
        "The live lists Portico keeps for you hold {0} MiB, the most one person may: close some views (or narrow them with a label selector), or wait a minute for idle ones to stop."
    )]
    BytesPerPerson(usize),
    #[error("Portico holds the most live lists it may in memory ({0} MiB): try again shortly.")]
    BytesOverall(usize),
}

impl LimitRefused {
    /// This refusal, counted in the portal's metrics by its bound's name.
    pub fn counted(self) -> Self {
        crate::portal_metrics::PORTAL.refused((&self).into());
        self
    }
}

/// A refused live view is answered 429 with the sentence saying which bound was
/// reached (the handlers' error type, so `?` does the mapping).
impl From<LimitRefused> for (StatusCode, String) {
    fn from(refused: LimitRefused) -> Self {
        (StatusCode::TOO_MANY_REQUESTS, refused.to_string())
    }
}

/// Which refusal a full count gives, from its bound.
type Refusal = fn(usize) -> LimitRefused;

/// Counts open streams per identity (`None`: the portal's own, local mode).
#[derive(Debug, Default)]
pub struct StreamCounter {
    open: Mutex<HashMap<Option<String>, usize>>,
}

/// One open stream; dropping it gives the place back.
#[derive(Debug)]
pub struct StreamPermit {
    counter: Arc<StreamCounter>,
    owner: Option<String>,
}

impl StreamCounter {
    /// A place for one more stream of `owner`, if the limits allow.
    pub fn acquire(
        self: &Arc<Self>,
        owner: Option<String>,
        limits: &LiveLimits,
    ) -> Result<StreamPermit, LimitRefused> {
        self.acquire_within(
            owner,
            (limits.streams_per_person, limits.streams_overall),
            (LimitRefused::StreamsPerPerson, LimitRefused::StreamsOverall),
        )
    }

    /// A place for one more socket of `owner` (this counter counting sockets).
    pub fn acquire_socket(
        self: &Arc<Self>,
        owner: Option<String>,
        limits: &LiveLimits,
    ) -> Result<StreamPermit, LimitRefused> {
        self.acquire_within(
            owner,
            (limits.sockets_per_person, limits.sockets_overall),
            (LimitRefused::SocketsPerPerson, LimitRefused::SocketsOverall),
        )
    }

    pub fn acquire_terminal(
        self: &Arc<Self>,
        owner: Option<String>,
        limits: &LiveLimits,
    ) -> Result<StreamPermit, LimitRefused> {
        self.acquire_within(
            owner,
            (limits.terminals_per_person, limits.terminals_overall),
            (
                LimitRefused::TerminalsPerPerson,
                LimitRefused::TerminalsOverall,
            ),
        )
    }

    pub fn acquire_overview(
        self: &Arc<Self>,
        owner: Option<String>,
        limits: &LiveLimits,
    ) -> Result<StreamPermit, LimitRefused> {
        self.acquire_within(
            owner,
            (limits.overviews_per_person, limits.overviews_overall),
            (
                LimitRefused::OverviewsPerPerson,
                LimitRefused::OverviewsOverall,
            ),
        )
    }

    fn acquire_within(
        self: &Arc<Self>,
        owner: Option<String>,
        (per_person, overall): (usize, usize),
        (mine_full, all_full): (Refusal, Refusal),
    ) -> Result<StreamPermit, LimitRefused> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let total: usize = open.values().sum();
        if total >= overall {
            return Err(all_full(overall).counted());
        }
        let mine = open.entry(owner.clone()).or_default();
        if *mine >= per_person {
            return Err(mine_full(per_person).counted());
        }
        *mine += 1;
        Ok(StreamPermit {
            counter: self.clone(),
            owner,
        })
    }

    /// Streams open now, everyone's.
    pub fn total(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .sum()
    }

    /// Streams open now for `owner`.
    pub fn open_for(&self, owner: &Option<String>) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(owner)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.counter.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&self.owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_bounded_per_person_and_overall_and_given_back_on_drop() {
        let limits = LiveLimits {
            streams_per_person: 2,
            streams_overall: 3,
            ..LiveLimits::default()
        };
        let counter = Arc::new(StreamCounter::default());
        let ada = || Some("ada".to_string());
        let a1 = counter.acquire(ada(), &limits).expect("first");
        let _a2 = counter.acquire(ada(), &limits).expect("second");
        assert_eq!(
            counter.acquire(ada(), &limits).err(),
            Some(LimitRefused::StreamsPerPerson(2))
        );
        let _b = counter
            .acquire(Some("bob".into()), &limits)
            .expect("someone else");
        assert_eq!(
            counter.acquire(Some("cy".into()), &limits).err(),
            Some(LimitRefused::StreamsOverall(3))
        );
        drop(a1);
        assert_eq!(counter.open_for(&ada()), 1);
        assert!(counter.acquire(ada(), &limits).is_ok());
    }

    #[test]
    fn terminals_are_bounded_per_person_and_overall_and_said_as_terminals() {
        let limits = LiveLimits {
            terminals_per_person: 1,
            terminals_overall: 2,
            ..LiveLimits::default()
        };
        let counter = Arc::new(StreamCounter::default());
        let ada = || Some("ada".to_string());
        let first = counter.acquire_terminal(ada(), &limits).expect("first");
        let refused = counter.acquire_terminal(ada(), &limits).err();
        assert_eq!(refused, Some(LimitRefused::TerminalsPerPerson(1)));
        assert!(refused.is_some_and(|r| r.to_string().contains("1 terminals open")));
        let _bob = counter
            .acquire_terminal(Some("bob".into()), &limits)
            .expect("someone else");
        assert_eq!(
            counter.acquire_terminal(Some("cy".into()), &limits).err(),
            Some(LimitRefused::TerminalsOverall(2))
        );
        drop(first);
        assert!(counter.acquire_terminal(ada(), &limits).is_ok());
    }
}
