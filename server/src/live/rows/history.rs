//! A feed's recent changes, kept for viewers that fall behind or reconnect, and shared
//! by every feed that saw the same ones: a thousand people watching one namespace
//! hold one history between them. The changes are a persistent vector
//! ([`imbl::Vector`]), so a history one change longer shares all but its last few
//! slots with the one it was made from.

use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock};

use imbl::Vector;
use portico_core::table::wire::TableDelta;

use crate::live::rows::sizes::delta_bytes;

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
    /// The wrapping sum of a hash of each change's address: histories of the same
    /// shared changes have the same sum, which is how a feed finds the copy others hold.
    identity: u64,
}

impl PartialEq for History {
    /// The same shared changes in the same order.
    fn eq(&self, other: &Self) -> bool {
        self.identity == other.identity
            && self.changes.len() == other.changes.len()
            && (self.changes.ptr_eq(&other.changes)
                || self
                    .changes
                    .iter()
                    .zip(&other.changes)
                    .all(|(a, b)| Arc::ptr_eq(a, b)))
    }
}

static EMPTY: LazyLock<Arc<History>> = LazyLock::new(Arc::default);

impl History {
    /// No changes, to stand in for a history being replaced (taking it allocates
    /// nothing). A feed's own empty history is a new one: a history every empty feed
    /// held would never go, nor would what was made of it.
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

    /// Which sum of change addresses this is (what equal histories are found by).
    pub(in crate::live) fn identity(&self) -> u64 {
        self.identity
    }

    /// The changes, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<TableDelta>> {
        self.changes.iter()
    }

    /// Adds the newest change, forgetting the oldest past [`HISTORY`] changes or
    /// `HISTORY_BYTES` (the newest is always kept).
    pub(in crate::live) fn push(&mut self, change: Arc<TableDelta>, addresses: &RandomState) {
        if self.changes.len() >= HISTORY {
            self.forget_oldest(addresses);
        }
        self.bytes += delta_bytes(&change);
        self.identity = self.identity.wrapping_add(address_hash(addresses, &change));
        self.changes.push_back(change);
        while self.bytes > HISTORY_BYTES && self.changes.len() > 1 {
            self.forget_oldest(addresses);
        }
    }

    fn forget_oldest(&mut self, addresses: &RandomState) {
        if let Some(oldest) = self.changes.pop_front() {
            self.bytes = self.bytes.saturating_sub(delta_bytes(&oldest));
            self.identity = self.identity.wrapping_sub(address_hash(addresses, &oldest));
        }
    }
}

/// A change's address, hashed: a live shared change keeps its address.
fn address_hash(addresses: &RandomState, change: &Arc<TableDelta>) -> u64 {
    addresses.hash_one(Arc::as_ptr(change) as usize)
}
