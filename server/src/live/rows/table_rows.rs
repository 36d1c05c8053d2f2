//! A feed's rows as one value, shared by every feed that holds the same rows. When a
//! thousand people watch one namespace, each through their own watch, their feeds
//! hold one table between them instead of a thousand, and each change is applied to
//! it once ([`Interner::apply`](crate::live::rows::intern::Interner::apply)). Equal means the same
//! shared rows, so nobody is ever shown a row their own watch did not deliver.
//!
//! The rows are a persistent B-tree ([`imbl::OrdSet`]): a change copies the few nodes
//! on its path and shares the rest with the table it was made from, so the versions
//! between the slowest feed's and the newest cost a path each, not a table each.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock};

use imbl::OrdSet;
use portico_core::table::wire::{Row, TableDelta};

use crate::live::rows::sizes::row_bytes;

/// What a table's tree takes a row (its pointer, and its share of the nodes).
const ROW_SLOT: usize = 16;
/// What a change's copy of the nodes on its path takes (16 entries a node, 4 deep at
/// 10,000 rows).
const PATH_BYTES: usize = 1024;

/// A feed's rows by uid, never changed once shared (a change makes a new value, or
/// changes this one where it is when its holder is the only one).
#[derive(Clone, Default)]
pub struct TableRows {
    rows: OrdSet<ByUid>,
    /// The wrapping sum of a hash of each row's address: the same shared rows give the
    /// same sum however they were arrived at, and a change updates it row by row.
    identity: u64,
    /// About what the rows would take were nothing shared (what a person is charged).
    bytes: usize,
    /// About what this value holds of its own: the whole tree for a list, the nodes a
    /// change copied for a table made by one.
    own: usize,
}

static EMPTY: LazyLock<Arc<TableRows>> = LazyLock::new(Arc::default);

impl PartialEq for TableRows {
    /// The same rows: the same shared copies (rows are interned, so equal rows that
    /// are both alive are one copy).
    fn eq(&self, other: &Self) -> bool {
        self.identity == other.identity
            && self.rows.len() == other.rows.len()
            && (self.rows.ptr_eq(&other.rows)
                || self
                    .rows
                    .iter()
                    .zip(&other.rows)
                    .all(|(a, b)| Arc::ptr_eq(&a.0, &b.0)))
    }
}

impl TableRows {
    /// No rows, shared by everyone who has none (taking it allocates nothing).
    pub fn empty() -> Arc<Self> {
        EMPTY.clone()
    }

    /// A list's rows; were an object named twice, the later wins.
    pub(in crate::live) fn listed(rows: Vec<Arc<Row>>, addresses: &RandomState) -> Self {
        let mut table = Self::default();
        for row in rows {
            table.put(row, addresses);
        }
        table.own = std::mem::size_of::<Self>() + table.rows.len() * ROW_SLOT;
        table
    }

    /// The rows in uid order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Row>> {
        self.rows.iter().map(|row| &row.0)
    }

    pub fn to_vec(&self) -> Vec<Arc<Row>> {
        self.iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// About what the rows would take were nothing shared.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Which sum of row addresses this is (what equal values are found by).
    pub(in crate::live) fn identity(&self) -> u64 {
        self.identity
    }

    /// What this value holds of its own (the rows are counted where they are
    /// interned). A table made by a change is counted for the path it copied, though
    /// it keeps the rest alive once the table it was made from is gone: an under-count
    /// of at most [`ROW_SLOT`] a row for each line of changes, beside rows that are
    /// counted whole.
    pub(in crate::live) fn own_bytes(&self) -> usize {
        self.own
    }

    /// Applies a watch event's change: its rows put in place, its deletions removed.
    pub(in crate::live) fn apply(&mut self, change: &TableDelta, addresses: &RandomState) {
        for row in &change.upserts {
            self.put(row.clone(), addresses);
        }
        for uid in &change.deletes {
            self.remove(uid, addresses);
        }
        self.own = std::mem::size_of::<Self>()
            + PATH_BYTES * (change.upserts.len() + change.deletes.len());
    }

    fn put(&mut self, row: Arc<Row>, addresses: &RandomState) {
        self.count_in(&row, addresses);
        if let Some(ByUid(old)) = self.rows.insert(ByUid(row)) {
            self.count_out(&old, addresses);
        }
    }

    fn remove(&mut self, uid: &str, addresses: &RandomState) {
        if let Some(ByUid(old)) = self.rows.remove(uid) {
            self.count_out(&old, addresses);
        }
    }

    fn count_in(&mut self, row: &Arc<Row>, addresses: &RandomState) {
        self.identity = self.identity.wrapping_add(address_hash(addresses, row));
        self.bytes += row_bytes(row);
    }

    fn count_out(&mut self, row: &Arc<Row>, addresses: &RandomState) {
        self.identity = self.identity.wrapping_sub(address_hash(addresses, row));
        self.bytes = self.bytes.saturating_sub(row_bytes(row));
    }
}

/// A row placed by its uid (an object's one row in a table).
#[derive(Clone)]
struct ByUid(Arc<Row>);

impl PartialEq for ByUid {
    fn eq(&self, other: &Self) -> bool {
        self.0.uid == other.0.uid
    }
}

impl Eq for ByUid {}

impl PartialOrd for ByUid {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByUid {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.uid.cmp(&other.0.uid)
    }
}

impl Borrow<str> for ByUid {
    fn borrow(&self) -> &str {
        &self.0.uid
    }
}

/// A row's address, hashed: a live shared row keeps its address, and two values
/// holding it hold the same copy.
fn address_hash(addresses: &RandomState, row: &Arc<Row>) -> u64 {
    addresses.hash_one(Arc::as_ptr(row) as usize)
}
