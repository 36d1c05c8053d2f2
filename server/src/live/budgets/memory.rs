//! Bytes held for live tables (every feed's rows and recent changes), counted per
//! person and overall, so one person cannot fill a replica's memory by opening many
//! feeds of big lists (distinct label selectors make each a feed of its own). A feed
//! counts against the person it runs for for as long as it runs, lingering after its
//! last viewer included; past a bound it ends with a sentence and frees its rows.
//!
//! Rows are shared between feeds ([`Interner`]), so the two bounds count different
//! things: a person is charged for their rows as if nothing were shared (what they
//! ask the portal to hold does not depend on who else looks), while the overall
//! bound counts what the replica really holds: each shared row and each shared
//! table of them once, plus what each feed holds of its own (its history's pointers,
//! its viewers' queue).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::live::budgets::limits::LimitRefused;
use crate::live::rows::intern::Interner;

/// A feed's bytes, as its person is charged for them and as the replica holds them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Its rows and history as if unshared.
    pub logical: usize,
    /// What it holds of its own: pointers, queues, its state.
    pub owned: usize,
}

const MIB: usize = 1 << 20;

/// The bounds and what is held now.
pub struct MemoryBudget {
    per_person: usize,
    overall: usize,
    held: Mutex<Held>,
    shared: Arc<Interner>,
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("per_person", &self.per_person)
            .field("overall", &self.overall)
            .field("held", &self.held)
            .field("shared", &self.shared.bytes())
            .finish()
    }
}

#[derive(Debug, Default)]
struct Held {
    /// Every feed's own bytes (the shared rows are the interner's).
    owned: usize,
    by_person: HashMap<Option<String>, usize>,
}

impl MemoryBudget {
    /// At most `per_person` bytes for one person's feeds and `overall` for all.
    pub fn new(per_person: usize, overall: usize) -> Self {
        Self {
            per_person,
            overall,
            held: Mutex::default(),
            shared: Arc::default(),
        }
    }

    /// Where the feeds counted here share their rows.
    /// The most bytes all feeds may hold.
    pub fn overall_limit(&self) -> usize {
        self.overall
    }

    pub fn interner(&self) -> &Arc<Interner> {
        &self.shared
    }

    /// No bounds (tests of other things, benchmarks of the hub alone).
    pub fn unbounded() -> Self {
        Self::new(usize::MAX, usize::MAX)
    }

    /// Whether `person` may start another feed: both counts are below their bounds.
    pub fn admits(&self, person: &Option<String>) -> Result<(), LimitRefused> {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.owned + self.shared.bytes() >= self.overall {
            return Err(LimitRefused::BytesOverall(self.overall / MIB).counted());
        }
        if held.by_person.get(person).copied().unwrap_or(0) >= self.per_person {
            return Err(LimitRefused::BytesPerPerson(self.per_person / MIB).counted());
        }
        Ok(())
    }

    /// Moves one feed of `person` from `before` to `after`. The counts move either
    /// way; `Err` says a bound is now exceeded (and the feed should end, which gives
    /// its bytes back).
    pub fn resize(
        &self,
        person: &Option<String>,
        before: Footprint,
        after: Footprint,
    ) -> Result<(), LimitRefused> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.owned = (held.owned + after.owned).saturating_sub(before.owned);
        let mine = held.by_person.entry(person.clone()).or_default();
        *mine = (*mine + after.logical).saturating_sub(before.logical);
        let mine = *mine;
        if mine == 0 {
            held.by_person.remove(person);
        }
        if after.logical <= before.logical && after.owned <= before.owned {
            return Ok(());
        }
        if mine > self.per_person {
            return Err(LimitRefused::BytesPerPerson(self.per_person / MIB).counted());
        }
        if held.owned + self.shared.bytes() > self.overall {
            return Err(LimitRefused::BytesOverall(self.overall / MIB).counted());
        }
        Ok(())
    }

    /// Sets `bytes` aside for `person` (a log view's most), both counts, until the
    /// returned reservation is dropped; refused when either bound would be passed.
    pub fn reserve(
        self: &Arc<Self>,
        person: &Option<String>,
        bytes: usize,
    ) -> Result<Reservation, LimitRefused> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.owned + self.shared.bytes() + bytes > self.overall {
            return Err(LimitRefused::BytesOverall(self.overall / MIB).counted());
        }
        let mine = held.by_person.entry(person.clone()).or_default();
        if *mine + bytes > self.per_person {
            if *mine == 0 {
                held.by_person.remove(person);
            }
            return Err(LimitRefused::BytesPerPerson(self.per_person / MIB).counted());
        }
        *mine += bytes;
        held.owned += bytes;
        Ok(Reservation {
            budget: self.clone(),
            person: person.clone(),
            bytes,
        })
    }

    /// Bytes held now for `person` (as if unshared), and for everyone (as held).
    pub fn held(&self, person: &Option<String>) -> (usize, usize) {
        let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        (
            held.by_person.get(person).copied().unwrap_or(0),
            held.owned + self.shared.bytes(),
        )
    }
}

/// Bytes set aside by [`MemoryBudget::reserve`], given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<MemoryBudget>,
    person: Option<String>,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let size = Footprint {
            logical: self.bytes,
            owned: self.bytes,
        };
        // Giving back never fails: the counts only shrink.
        let _ = self.budget.resize(&self.person, size, Footprint::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_counts_for_its_person_until_dropped() {
        let budget = Arc::new(MemoryBudget::new(100, 150));
        let ada = Some("ada".to_string());
        let bob = Some("bob".to_string());
        let first = budget.reserve(&ada, 60).expect("within the bound");
        assert_eq!(
            budget.reserve(&ada, 60).err(),
            Some(LimitRefused::BytesPerPerson(0))
        );
        let theirs = budget.reserve(&bob, 80).expect("another person's share");
        assert_eq!(
            budget.reserve(&bob, 20).err(),
            Some(LimitRefused::BytesOverall(0))
        );
        assert_eq!(budget.held(&ada), (60, 140));
        drop(first);
        drop(theirs);
        assert_eq!(budget.held(&ada), (0, 0));
        assert!(budget.reserve(&ada, 100).is_ok());
    }

    #[test]
    fn each_person_is_bounded_alone_and_everyone_together() {
        let budget = MemoryBudget::new(100, 150);
        let (ada, bob) = (Some("ada".to_string()), Some("bob".to_string()));
        // Unshared, a feed holds what it is charged for.
        let bytes = |n| Footprint {
            logical: n,
            owned: n,
        };
        let none = Footprint::default();
        assert!(budget.resize(&ada, none, bytes(90)).is_ok());
        assert!(budget.admits(&ada).is_ok());
        assert_eq!(
            budget.resize(&ada, bytes(90), bytes(110)),
            Err(LimitRefused::BytesPerPerson(0))
        );
        assert!(budget.admits(&ada).is_err());
        assert!(budget.admits(&bob).is_ok(), "one person's use is theirs");
        assert_eq!(
            budget.resize(&bob, none, bytes(60)),
            Err(LimitRefused::BytesOverall(0))
        );
        // Giving back is always allowed and frees both counts.
        assert!(budget.resize(&ada, bytes(110), none).is_ok());
        assert_eq!(budget.held(&ada), (0, 60));
        assert!(budget.admits(&ada).is_ok());
    }

    #[test]
    fn shared_rows_count_once_overall_and_whole_for_each_person() {
        let budget = MemoryBudget::new(100, 150);
        // A hundred people each watching the same 80 bytes of rows, through feeds
        // holding 1 byte of their own: each is charged 80, the replica holds 180.
        for i in 0..100 {
            let person = Some(format!("p{i}"));
            let feed = Footprint {
                logical: 80,
                owned: 1,
            };
            assert!(budget.resize(&person, Footprint::default(), feed).is_ok());
            assert_eq!(budget.held(&person).0, 80);
        }
        assert_eq!(budget.held(&None).1, 100);
    }
}
