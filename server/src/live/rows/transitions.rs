//! What applying a change made of a shared value, for the feeds that apply the same
//! change to the same value after the first: they take its result instead of making
//! their own, so a thousand feeds of one namespace stay one table and one history.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Weak};

use portico_core::table::wire::TableDelta;

/// Results by the addresses of the value and the change they were made of. An entry's
/// weak pointers keep both addresses from being reused while it exists, so an address
/// found here is the value it was made from (shared values are never changed). A new
/// result is held until the value it was made from is gone, so the feeds still at that
/// value find it however far ahead the first has gone, within [`TRANSITIONS`] results
/// in all. A result that was already held elsewhere (a change undone gives back an
/// earlier table) is only pointed at, so that no line of results holds itself.
pub(in crate::live) struct Transitions<T> {
    by_pair: HashMap<(usize, usize), Transition<T>>,
    /// Oldest first, for the bound.
    order: VecDeque<(usize, usize)>,
    added_since_sweep: usize,
}

struct Transition<T> {
    from: Weak<T>,
    change: Weak<TableDelta>,
    to: Outcome<T>,
}

/// A result, held or only pointed at.
enum Outcome<T> {
    Held(Arc<T>),
    Seen(Weak<T>),
}

/// How many results are held at most: a feed further behind than this many changes
/// (over every shared value of the kind) makes its own.
const TRANSITIONS: usize = 4096;

impl<T> Default for Transitions<T> {
    fn default() -> Self {
        Self {
            by_pair: HashMap::new(),
            order: VecDeque::new(),
            added_since_sweep: 0,
        }
    }
}

impl<T> Transitions<T> {
    /// What `change` made of `from`, if a feed applied it before.
    pub(in crate::live) fn after(&self, from: &Arc<T>, change: &Arc<TableDelta>) -> Option<Arc<T>> {
        let key = (Arc::as_ptr(from) as usize, Arc::as_ptr(change) as usize);
        match &self.by_pair.get(&key)?.to {
            Outcome::Held(to) => Some(to.clone()),
            Outcome::Seen(to) => to.upgrade(),
        }
    }

    /// Records that `change` made `to` of `from`; `made` says `to` is new (no one else
    /// held it), so it is held here for the feeds behind.
    pub(in crate::live) fn remember(
        &mut self,
        from: Weak<T>,
        change: &Arc<TableDelta>,
        to: &Arc<T>,
        made: bool,
    ) {
        let key = (from.as_ptr() as usize, Arc::as_ptr(change) as usize);
        let transition = Transition {
            from,
            change: Arc::downgrade(change),
            to: if made {
                Outcome::Held(to.clone())
            } else {
                Outcome::Seen(Arc::downgrade(to))
            },
        };
        // The same pair again (two feeds made it at once): one entry, in order once.
        if self.by_pair.insert(key, transition).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > TRANSITIONS {
            if let Some(oldest) = self.order.pop_front() {
                self.by_pair.remove(&oldest);
            }
        }
        self.added_since_sweep += 1;
        if self.added_since_sweep > self.by_pair.len() / 2 + 64 {
            self.sweep();
        }
    }

    /// How many results are recorded.
    #[cfg(test)]
    pub(in crate::live) fn len(&self) -> usize {
        self.by_pair.len()
    }

    /// Forgets the results nobody can ask for again: the value or the change they were
    /// made of is gone, or the result itself. Oldest first, so that a line of changes
    /// nobody is behind on goes in one pass (forgetting a result lets go of the value
    /// the next one was made from).
    pub(in crate::live) fn sweep(&mut self) {
        let mut kept = VecDeque::with_capacity(self.order.len());
        for key in self.order.drain(..) {
            match self.by_pair.get(&key) {
                Some(transition) if transition.can_be_asked() => kept.push_back(key),
                Some(_) => {
                    self.by_pair.remove(&key);
                }
                None => {}
            }
        }
        self.order = kept;
        self.added_since_sweep = 0;
    }
}

impl<T> Transition<T> {
    fn can_be_asked(&self) -> bool {
        self.from.strong_count() > 0
            && self.change.strong_count() > 0
            && match &self.to {
                Outcome::Held(_) => true,
                Outcome::Seen(to) => to.strong_count() > 0,
            }
    }
}
