//! One copy of a row, and of a change, however many feeds hold it. When a thousand
//! people each watch the same namespace, each through their own upstream watch, the
//! API server sends each of them the same rows; keeping one copy is what keeps the
//! portal's memory from growing with the number of people. Sharing is invisible to
//! them: a copy is reused only when it is equal in every field to what that
//! person's own watch delivered, so nobody is ever shown a row their watch did not
//! send.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use portico_core::table::wire::{Row, TableDelta};

use super::memory::{delta_bytes, row_bytes};

/// The rows and changes feeds hold now, one copy of each.
#[derive(Default)]
pub struct Interner {
    rows: Mutex<Pool<Row>>,
    deltas: Mutex<Pool<TableDelta>>,
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
                bucket.retain(|(weak, bytes)| {
                    let live = weak.strong_count() > 0;
                    if !live {
                        freed += *bytes;
                    }
                    live
                });
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

    fn live(&self) -> usize {
        self.by_key
            .values()
            .flatten()
            .filter(|(weak, _)| weak.strong_count() > 0)
            .count()
    }
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
}
