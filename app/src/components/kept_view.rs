//! A view's state kept across redraws of the page's parts: an object's page redraws
//! its detail on every change of the object (a Pod's or a Deployment's status changes
//! often), and a log must not start over each time. One state at a time per holder:
//! asking for another key ends the one held.

use leptos::prelude::*;

pub struct Kept<T: Copy + Send + Sync + 'static> {
    current: StoredValue<Option<(String, Owner, T)>>,
    /// The page's owner, under which every state is made (not the redrawn part's).
    owner: StoredValue<Option<Owner>>,
}

impl<T: Copy + Send + Sync + 'static> Clone for Kept<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: Copy + Send + Sync + 'static> Copy for Kept<T> {}

impl<T: Copy + Send + Sync + 'static> Default for Kept<T> {
    /// A holder whose states live under the calling component.
    fn default() -> Self {
        Self {
            current: StoredValue::new(None),
            owner: StoredValue::new(Owner::current()),
        }
    }
}

impl<T: Copy + Send + Sync + 'static> Kept<T> {
    /// Ends the state held, if any (its view is no longer shown).
    pub fn end(self) {
        if let Some((_, old, _)) = self.current.get_value() {
            self.current.set_value(None);
            #[cfg(feature = "hydrate")]
            queue_microtask(move || old.cleanup());
            #[cfg(not(feature = "hydrate"))]
            old.cleanup();
        }
    }

    /// The state for `key`: the one held, or one `make` makes (ending the old).
    pub fn get_or_make(self, key: String, make: impl FnOnce() -> T) -> T {
        if let Some(state) = self
            .current
            .with_value(|c| c.as_ref().filter(|(k, ..)| *k == key).map(|(.., s)| *s))
        {
            return state;
        }
        if let Some((_, old, _)) = self.current.get_value() {
            // After the old view is gone: its effects still read this state until then.
            #[cfg(feature = "hydrate")]
            queue_microtask(move || old.cleanup());
            #[cfg(not(feature = "hydrate"))]
            old.cleanup();
        }
        let owner = self
            .owner
            .get_value()
            .map(|o| o.child())
            .unwrap_or_default();
        let state = owner.with(make);
        self.current.set_value(Some((key, owner, state)));
        state
    }
}
