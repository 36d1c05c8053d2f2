//! One copy of a row, and of a change, however many feeds hold it. When a thousand
//! people each watch the same namespace, each through their own upstream watch, the
//! API server sends each of them the same rows; keeping one copy is what keeps the
//! portal's memory from growing with the number of people. Sharing is invisible to
//! them: a copy is reused only when it is equal in every field to what that
//! person's own watch delivered, so nobody is ever shown a row their watch did not
//! send. A feed's whole table of rows is shared the same way ([`TableRows`]), and
//! a change to it is applied once for every feed that held the same table.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use portico_core::table::wire::{Row, TableDelta};

use crate::live::rows::history::History;
use crate::live::rows::sizes::{delta_bytes, row_bytes};
use crate::live::rows::table_rows::TableRows;
use crate::live::rows::transitions::Transitions;

/// The rows and changes feeds hold now, one copy of each.
#[derive(Default)]
pub struct Interner {
    rows: Mutex<Pool<Row>>,
    deltas: Mutex<Pool<TableDelta>>,
    tables: Mutex<Pool<TableRows>>,
    /// Which table a change made of which: the 999 feeds after the first that apply
    /// a change to the same table take the first's result.
    table_changes: Mutex<Transitions<TableRows>>,
    /// Histories, one copy of each, and what a change made of which, the same way.
    histories: Mutex<Pool<History>>,
    history_changes: Mutex<Transitions<History>>,
    /// Bytes of what the pools point at (dead entries included until swept).
    bytes: AtomicUsize,
    hasher: RandomState,
}

impl Interner {
    /// The shared copy of `row`.
    pub fn row(&self, row: Row) -> Arc<Row> {
        let key = self
            .hasher
            .hash_one((&row.uid, &row.resource_version, row.cells.len()));
        self.pool(&self.rows, key, row, row_bytes)
    }

    /// The shared copy of a change (its rows already shared: see [`Self::row`]).
    pub fn delta(&self, delta: TableDelta) -> Arc<TableDelta> {
        let mut state = self.hasher.build_hasher();
        for row in &delta.upserts {
            (&row.uid, &row.resource_version).hash(&mut state);
        }
        delta.deletes.hash(&mut state);
        delta.resource_version.hash(&mut state);
        let key = std::hash::Hasher::finish(&state);
        // The rows are counted where they are interned; this is the list of them.
        let bytes = |delta: &TableDelta| {
            delta_bytes(delta).saturating_sub(
                delta
                    .upserts
                    .iter()
                    .map(|row| row_bytes(row))
                    .sum::<usize>(),
            )
        };
        self.pool(&self.deltas, key, delta, bytes)
    }

    /// The shared copy of a table of `rows` (already shared: see [`Self::row`]).
    pub fn table(&self, rows: Vec<Arc<Row>>) -> Arc<TableRows> {
        // An empty table is a feed's own: one every empty list held would never go,
        // nor would the tables made of it.
        if rows.is_empty() {
            return Arc::default();
        }
        let table = TableRows::listed(rows, &self.hasher);
        self.pool(&self.tables, table.identity(), table, TableRows::own_bytes)
    }

    /// `table` after `change` (shared: see [`Self::delta`]), as shared a copy as there
    /// is: what another feed made of the same table and change, or an equal table
    /// another feed holds. A table nobody else holds is changed where it is.
    pub fn apply(&self, table: Arc<TableRows>, change: &Arc<TableDelta>) -> Arc<TableRows> {
        let known = lock(&self.table_changes).after(&table, change);
        if let Some(known) = known {
            self.release(table);
            return known;
        }
        let from = Arc::downgrade(&table);
        // Cloned, a table shares all its nodes: only those on the change's path are copied.
        let (mut rows, shared) = match Arc::try_unwrap(table) {
            Ok(rows) => {
                self.forget_table(rows.identity());
                (rows, false)
            }
            Err(shared) => {
                let rows = TableRows::clone(&shared);
                self.release(shared);
                (rows, true)
            }
        };
        rows.apply(change, &self.hasher);
        let after = self.pool(&self.tables, rows.identity(), rows, TableRows::own_bytes);
        if shared {
            let made = Arc::strong_count(&after) == 1;
            lock(&self.table_changes).remember(from, change, &after, made);
        }
        after
    }

    /// `history` with `change` added, as shared a copy as there is: what another feed
    /// made of the same history and change, or an equal history another feed holds. A
    /// history nobody else holds is changed where it is.
    pub fn remember(&self, history: Arc<History>, change: &Arc<TableDelta>) -> Arc<History> {
        let known = lock(&self.history_changes).after(&history, change);
        if let Some(known) = known {
            return known;
        }
        let from = Arc::downgrade(&history);
        let (mut longer, shared) = match Arc::try_unwrap(history) {
            Ok(history) => (history, false),
            Err(shared) => (History::clone(&shared), true),
        };
        longer.push(change.clone(), &self.hasher);
        // Counted per feed (see `feed::HISTORY_SLOT`), so nothing here.
        let longer = self.pool(&self.histories, longer.identity(), longer, |_| 0);
        if shared {
            let made = Arc::strong_count(&longer) == 1;
            lock(&self.history_changes).remember(from, change, &longer, made);
        }
        longer
    }

    /// Lets go of a table. A table is big, so the last holder's letting go uncounts
    /// it at once rather than when the pool is next swept.
    pub fn release(&self, table: Arc<TableRows>) {
        if let Some(rows) = Arc::into_inner(table) {
            self.forget_table(rows.identity());
        }
    }

    fn forget_table(&self, identity: u64) {
        let freed = lock(&self.tables).sweep(identity);
        if freed > 0 {
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
    }

    /// Bytes held by the shared copies.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Live shared rows (for tests and benchmarks).
    pub fn rows(&self) -> usize {
        lock(&self.rows).live()
    }

    fn pool<T: PartialEq>(
        &self,
        pool: &Mutex<Pool<T>>,
        key: u64,
        value: T,
        bytes: impl FnOnce(&T) -> usize,
    ) -> Arc<T> {
        let Interned {
            shared,
            added,
            freed,
        } = lock(pool).intern(key, value, bytes);
        if added > 0 {
            self.bytes.fetch_add(added, Ordering::Relaxed);
        }
        if freed > 0 {
            self.bytes.fetch_sub(freed, Ordering::Relaxed);
        }
        shared
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

struct Interned<T> {
    shared: Arc<T>,
    /// Bytes of a copy made now; 0 for one already held (sizing a row walks its
    /// cells, which a hit, the common case, does not need).
    added: usize,
    /// Bytes of dead entries swept meanwhile.
    freed: usize,
}

/// Weak references by a hash of their identity: an entry does not keep its value
/// alive, and dead entries are swept once as many have been added as the pool holds.
/// Values that differ under one hash (another API version's columns, a collision)
/// each keep an entry, so every byte counted is given back when its value dies.
struct Pool<T> {
    by_key: HashMap<u64, Vec<(Weak<T>, usize)>>,
    entries: usize,
    added_since_sweep: usize,
}

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self {
            by_key: HashMap::new(),
            entries: 0,
            added_since_sweep: 0,
        }
    }
}

impl<T: PartialEq> Pool<T> {
    fn intern(&mut self, key: u64, value: T, size: impl FnOnce(&T) -> usize) -> Interned<T> {
        let bucket = self.by_key.entry(key).or_default();
        if let Some(existing) = bucket
            .iter()
            .filter_map(|(weak, _)| weak.upgrade())
            .find(|existing| **existing == value)
        {
            return Interned {
                shared: existing,
                added: 0,
                freed: 0,
            };
        }
        let bytes = size(&value);
        let shared = Arc::new(value);
        bucket.push((Arc::downgrade(&shared), bytes));
        self.entries += 1;
        self.added_since_sweep += 1;
        let mut freed = 0;
        if self.added_since_sweep > self.entries / 2 + 64 {
            self.by_key.retain(|_, bucket| {
                freed += keep_live(bucket);
                !bucket.is_empty()
            });
            self.entries = self.by_key.values().map(Vec::len).sum();
            self.added_since_sweep = 0;
        }
        Interned {
            shared,
            added: bytes,
            freed,
        }
    }

    /// Drops the dead entries under `key`; the bytes they were counted for.
    fn sweep(&mut self, key: u64) -> usize {
        let Some(bucket) = self.by_key.get_mut(&key) else {
            return 0;
        };
        let before = bucket.len();
        let freed = keep_live(bucket);
        self.entries = self.entries.saturating_sub(before - bucket.len());
        if bucket.is_empty() {
            self.by_key.remove(&key);
        }
        freed
    }

    fn live(&self) -> usize {
        self.by_key
            .values()
            .flatten()
            .filter(|(weak, _)| weak.strong_count() > 0)
            .count()
    }
}

/// Drops a bucket's dead entries; the bytes they were counted for.
fn keep_live<T>(bucket: &mut Vec<(Weak<T>, usize)>) -> usize {
    let mut freed = 0;
    bucket.retain(|(weak, bytes)| {
        let live = weak.strong_count() > 0;
        if !live {
            freed += *bytes;
        }
        live
    });
    freed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(uid: &str, rv: &str, cell: &str) -> Row {
        Row {
            uid: uid.into(),
            name: uid.into(),
            namespace: Some("shared".into()),
            resource_version: rv.into(),
            created: None,
            deleting: false,
            owners: vec![],
            changed: None,
            cells: vec![cell.into()],
        }
    }

    #[test]
    fn equal_rows_are_one_copy_and_different_ones_are_not() {
        let interner = Interner::default();
        let a = interner.row(row("u1", "7", "Running"));
        let b = interner.row(row("u1", "7", "Running"));
        assert!(Arc::ptr_eq(&a, &b));
        // Same object and version, other cells (another API version's columns):
        // never the other person's copy.
        let c = interner.row(row("u1", "7", "Pending"));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(c.cells, vec![serde_json::Value::from("Pending")]);
        let d = interner.row(row("u1", "8", "Running"));
        assert!(!Arc::ptr_eq(&a, &d));
    }

    #[test]
    fn copies_nobody_holds_are_freed_and_uncounted() {
        let interner = Interner::default();
        let held = interner.row(row("kept", "1", "x"));
        for i in 0..1_000 {
            drop(interner.row(row(&format!("u{i}"), "1", "x")));
        }
        assert!(interner.rows() == 1, "only the held row is live");
        // Swept as they go: what is counted is about the held row, not a thousand.
        assert!(
            interner.bytes() < 200 * row_bytes(&held),
            "{} bytes counted",
            interner.bytes()
        );
        drop(held);
    }

    #[test]
    fn unequal_rows_under_one_key_are_both_kept_and_both_given_back() {
        let interner = Interner::default();
        let running = interner.row(row("u1", "7", "Running"));
        let pending = interner.row(row("u1", "7", "Pending"));
        // Both stay shareable, neither pushed the other out.
        assert!(Arc::ptr_eq(
            &running,
            &interner.row(row("u1", "7", "Running"))
        ));
        assert!(Arc::ptr_eq(
            &pending,
            &interner.row(row("u1", "7", "Pending"))
        ));
        drop((running, pending));
        for i in 0..1_000 {
            drop(interner.row(row(&format!("u{i}"), "1", "x")));
        }
        // Swept as they go: nothing left counts for more than the last few.
        assert!(
            interner.bytes() < 200 * row_bytes(&row("u", "1", "x")),
            "{} bytes still counted",
            interner.bytes()
        );
    }

    #[test]
    fn equal_changes_are_one_copy() {
        let interner = Interner::default();
        let change = |interner: &Interner| {
            interner.delta(TableDelta {
                upserts: vec![interner.row(row("u1", "9", "x"))],
                deletes: vec![],
                resource_version: "9".into(),
            })
        };
        let (a, b) = (change(&interner), change(&interner));
        assert!(Arc::ptr_eq(&a, &b));
    }

    fn uids(table: &TableRows) -> Vec<(&str, &str)> {
        table
            .iter()
            .map(|row| (row.uid.as_str(), row.resource_version.as_str()))
            .collect()
    }

    fn listed(interner: &Interner, rows: &[(&str, &str)]) -> Arc<TableRows> {
        interner.table(
            rows.iter()
                .map(|(uid, rv)| interner.row(row(uid, rv, "x")))
                .collect(),
        )
    }

    fn change(interner: &Interner, upserts: &[(&str, &str)], deletes: &[&str]) -> Arc<TableDelta> {
        interner.delta(TableDelta {
            upserts: upserts
                .iter()
                .map(|(uid, rv)| interner.row(row(uid, rv, "x")))
                .collect(),
            deletes: deletes.iter().map(|uid| uid.to_string()).collect(),
            resource_version: "9".into(),
        })
    }

    #[test]
    fn feeds_that_list_the_same_rows_hold_one_table_and_a_change_makes_one_more() {
        let interner = Interner::default();
        let mine = listed(&interner, &[("b", "1"), ("a", "1")]);
        let theirs = listed(&interner, &[("a", "1"), ("b", "1")]);
        assert!(Arc::ptr_eq(&mine, &theirs));
        let edit = change(&interner, &[("b", "2"), ("c", "1")], &["a"]);
        let mine = interner.apply(mine, &edit);
        assert_eq!(uids(&mine), [("b", "2"), ("c", "1")]);
        // The other holder's table is as it was until its own watch brings the change,
        // and then it is the first's result.
        assert_eq!(uids(&theirs), [("a", "1"), ("b", "1")]);
        let theirs = interner.apply(theirs, &edit);
        assert!(Arc::ptr_eq(&mine, &theirs));
    }

    #[test]
    fn a_feed_behind_another_takes_each_table_the_first_made() {
        let interner = Interner::default();
        let mut ahead = listed(&interner, &[("a", "1"), ("b", "1")]);
        let mut behind = listed(&interner, &[("a", "1"), ("b", "1")]);
        let changes: Vec<_> = (2..6)
            .map(|v| change(&interner, &[("a", &v.to_string())], &[]))
            .collect();
        // The first feed goes through every change before the second sees any:
        // the tables it made and left are still there for the second.
        let mut made = Vec::new();
        for change in &changes {
            ahead = interner.apply(ahead, change);
            made.push(Arc::downgrade(&ahead));
        }
        for (change, made) in changes.iter().zip(&made) {
            behind = interner.apply(behind, change);
            let made = made.upgrade().expect("kept for the feed behind");
            assert!(Arc::ptr_eq(&behind, &made));
        }
        assert_eq!(uids(&behind), [("a", "5"), ("b", "1")]);
        // Once nobody is behind, what was kept for them goes.
        drop(made);
        drop(behind);
        for version in 6..200 {
            ahead = interner.apply(
                ahead,
                &change(&interner, &[("b", &version.to_string())], &[]),
            );
        }
        assert!(lock(&interner.table_changes).len() < 130);
    }

    #[test]
    fn feeds_that_saw_the_same_changes_hold_one_history_until_none_is_behind() {
        let interner = Interner::default();
        let changes: Vec<_> = (1..=3)
            .map(|v| change(&interner, &[("a", &v.to_string())], &[]))
            .collect();
        // Each starts from an empty history of its own, as a feed does after a list.
        let (mut ahead, mut behind) = (Arc::<History>::default(), Arc::<History>::default());
        for change in &changes {
            ahead = interner.remember(ahead, change);
        }
        let mut made = Vec::new();
        for change in &changes {
            behind = interner.remember(behind, change);
            made.push(Arc::downgrade(&behind));
        }
        assert!(Arc::ptr_eq(&ahead, &behind));
        assert_eq!(ahead.len(), 3);
        // Nobody behind: what was kept for them goes, and the history grows where it is.
        drop(behind);
        for v in 4..200 {
            ahead = interner.remember(ahead, &change(&interner, &[("a", &v.to_string())], &[]));
        }
        assert_eq!(ahead.len(), 199);
        assert!(lock(&interner.history_changes).len() < 130);
        assert!(made.iter().all(|made| made.upgrade().is_none()));
    }

    #[test]
    fn a_change_undone_does_not_keep_its_line_of_tables() {
        let interner = Interner::default();
        let start = listed(&interner, &[("a", "1")]);
        let mut tables = vec![start.clone(), start];
        let add = change(&interner, &[("b", "1")], &[]);
        let undo = change(&interner, &[], &["b"]);
        // Two feeds go back and forth: the table after the undo is the first one.
        for _ in 0..3 {
            for step in [&add, &undo] {
                for table in &mut tables {
                    let held = std::mem::replace(table, TableRows::empty());
                    *table = interner.apply(held, step);
                }
            }
        }
        assert!(Arc::ptr_eq(&tables[0], &tables[1]));
        assert_eq!(uids(&tables[0]), [("a", "1")]);
        let left = Arc::downgrade(&tables[0]);
        drop(tables);
        // Nobody holds a table any more, and the results recorded do not hold each
        // other: one sweep lets go of them all.
        lock(&interner.table_changes).sweep();
        assert!(left.upgrade().is_none());
    }

    #[test]
    fn a_table_reached_another_way_is_the_copy_already_held() {
        let interner = Interner::default();
        let changed = interner.apply(
            listed(&interner, &[("a", "1")]),
            &change(&interner, &[("b", "1")], &[]),
        );
        // A list made later holds the same rows: it gets the same copy, so the next
        // change to both is applied once.
        let relisted = listed(&interner, &[("a", "1"), ("b", "1")]);
        assert!(Arc::ptr_eq(&changed, &relisted));
        // Other rows under the same names are never taken for them.
        let other = listed(&interner, &[("a", "1"), ("b", "2")]);
        assert!(!Arc::ptr_eq(&changed, &other));
        assert_eq!(uids(&other), [("a", "1"), ("b", "2")]);
    }

    #[test]
    fn a_table_held_once_is_counted_once_however_often_it_changes() {
        let interner = Interner::default();
        let rows: Vec<(String, &str)> = (0..1_000).map(|i| (format!("u{i:04}"), "1")).collect();
        let rows: Vec<(&str, &str)> = rows.iter().map(|(uid, rv)| (uid.as_str(), *rv)).collect();
        let mut table = listed(&interner, &rows);
        let held = interner.bytes();
        for version in 2..200 {
            let version = version.to_string();
            table = interner.apply(table, &change(&interner, &[("u0500", &version)], &[]));
        }
        // No dead table is still counted (198 of them would be 3.2 MB; dead rows and
        // changes are swept in batches).
        assert!(
            interner.bytes() < held + 200_000,
            "{} bytes counted, {held} at first",
            interner.bytes()
        );
    }
}
