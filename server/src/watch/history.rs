//! A feed's recent changes, kept for viewers that fall behind or reconnect, and shared
//! by every feed that saw the same ones: a thousand people watching one namespace
//! hold one history between them. The changes are a persistent vector
//! ([`imbl::Vector`]), so a history one change longer shares all but its last few
//! slots with the one it was made from.

use std::sync::{Arc, LazyLock};

use imbl::Vector;
use portico_core::table::wire::TableDelta;

use super::memory::delta_bytes;

/// How many recent changes a feed keeps for viewers that fall behind or reconnect.
/// A viewer further behind (or behind a relist) gets a snapshot.
pub(crate) const HISTORY: usize = 4096;
/// And at most this many bytes of them (a feed of big rows keeps fewer).
const HISTORY_BYTES: usize = 4 << 20;

/// The latest changes, oldest first; never changed once shared (a change makes a new
/// value, or changes this one where it is when its holder is the only one).
#[derive(Clone, Default)]
pub struct History {
    changes: Vector<Arc<TableDelta>>,
    /// About what the changes would take were nothing shared (what a person is charged).
    bytes: usize,
}

static EMPTY: LazyLock<Arc<History>> = LazyLock::new(Arc::default);

impl History {
    /// No changes, to stand in for a history being replaced (taking it allocates
    /// nothing). A feed's own empty history is [`Interner::no_history`].
    ///
    /// [`Interner::no_history`]: super::intern::Interner::no_history
    pub fn empty() -> Arc<Self> {
        EMPTY.clone()
    }

    pub fn len(&self) -> usize {
        self.changes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// About what the changes would take were nothing shared.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The changes, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<TableDelta>> {
        self.changes.iter()
    }

    /// Adds the newest change, forgetting the oldest past [`HISTORY`] changes or
    /// `HISTORY_BYTES` (the newest is always kept).
    pub(super) fn push(&mut self, change: Arc<TableDelta>) {
        if self.changes.len() >= HISTORY {
            self.forget_oldest();
        }
        self.bytes += delta_bytes(&change);
        self.changes.push_back(change);
        while self.bytes > HISTORY_BYTES && self.changes.len() > 1 {
            self.forget_oldest();
        }
    }

    fn forget_oldest(&mut self) {
        if let Some(oldest) = self.changes.pop_front() {
            self.bytes = self.bytes.saturating_sub(delta_bytes(&oldest));
        }
    }
}
