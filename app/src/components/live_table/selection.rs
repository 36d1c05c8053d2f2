//! Which row is selected: changed at once by a click or a key, and kept in step with
//! the `selected` prop (the URL) without its echoes moving it back.

use std::collections::VecDeque;

use leptos::prelude::*;

/// The selected row's key (`namespace/name`) as the table shows it, and where a new
/// selection goes.
#[derive(Clone, Copy)]
pub struct Selection {
    pub cursor: RwSignal<Option<String>>,
    echoes: StoredValue<VecDeque<Option<String>>>,
    on_select: Option<Callback<Option<String>>>,
}

impl Selection {
    /// Selects `key` (or nothing) and tells `on_select`.
    pub fn select(&self, key: Option<String>) {
        self.cursor.set(key.clone());
        if let Some(on_select) = self.on_select {
            self.echoes.update_value(|q| q.push_back(key.clone()));
            on_select.run(key);
        }
    }
}

pub fn use_selection(
    selected: Option<Signal<Option<String>>>,
    on_select: Option<Callback<Option<String>>>,
) -> Selection {
    // The selection as the table shows it, changed at once by a click or a key; the
    // `selected` prop (the URL) follows a little later. A change of the prop that is
    // not the echo of one made here (a deep link, going back) moves the selection.
    let cursor = RwSignal::new(selected.and_then(|s| s.get_untracked()));
    let echoes = StoredValue::new(VecDeque::<Option<String>>::new());
    Effect::new(move |_| {
        let Some(prop) = selected else { return };
        let value = prop.get();
        let echo = echoes
            .try_update_value(|q| {
                q.iter().position(|v| *v == value).map(|i| {
                    q.drain(..=i);
                })
            })
            .flatten()
            .is_some();
        if !echo {
            cursor.set(value);
        }
    });
    Selection {
        cursor,
        echoes,
        on_select,
    }
}
