//! What was typed in a form survives the reload the app makes itself when it cannot go
//! on (`crate::reload_for_new_release`: a page part that cannot be fetched, a live
//! message it cannot read). The form shown keeps a copy of its draft in memory once it
//! differs from how the form started; only the reload writes it to the tab's session
//! storage, and only while the address is still the form's. The form at that address,
//! created within half a minute of the reload, takes it back once: on an edit, the edits go on top
//! of the object as the server has it now, as after a conflict.

use leptos::prelude::*;

use super::draft::DraftCells;

/// Where the draft waits across the reload (this tab only, removed when read).
#[cfg(feature = "hydrate")]
const KEY: &str = "portico-kept-draft";

/// How long a kept draft waits for its form: the reload, not a later visit.
#[cfg(feature = "hydrate")]
const FRESH_FOR_MS: f64 = 30_000.0;

#[cfg(feature = "hydrate")]
thread_local! {
    /// The address of the form on the page and its draft as JSON: ready before a
    /// panic, which may come while the form's own cells are being changed.
    static SHOWN: std::cell::RefCell<Option<(String, String)>> = const { std::cell::RefCell::new(None) };
}

#[cfg(feature = "hydrate")]
fn set_shown(shown: Option<(String, String)>) {
    SHOWN.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            *s = shown;
        }
    });
}

/// The page's address, which a kept draft must match to be written and taken back.
#[cfg(feature = "hydrate")]
fn address() -> Option<String> {
    let location = web_sys::window()?.location();
    Some(format!(
        "{}{}",
        location.pathname().ok()?,
        location.search().ok()?
    ))
}

/// Keeps `draft`'s latest state in memory while the form is shown, and takes back a
/// draft a reload kept for this address; `restored` is then set to `note(clashes)`,
/// with the paths both the kept edits and the server changed (an edit form only).
pub fn keep_across_reload(
    draft: DraftCells,
    restored: RwSignal<Option<String>>,
    note: fn(&[String]) -> String,
) {
    #[cfg(feature = "hydrate")]
    {
        use serde_json::Value;

        let Some(here) = address() else {
            return;
        };
        let kept = std::cell::RefCell::new(take_kept(&here));
        // How the form started; a plain cell, not a reactive one (no code of its own).
        let start = std::cell::RefCell::new(None::<Value>);
        Effect::new(move |_| {
            let now = draft.now();
            let Ok(mut start) = start.try_borrow_mut() else {
                return;
            };
            let Some(start) = start.as_ref() else {
                *start = Some(now.object);
                if let Some((object, original)) = kept.take() {
                    let mut clashes = Vec::new();
                    draft.change(|d| {
                        // On an edit, what was just read is the server's object now.
                        let latest = d.original.take();
                        d.object = object;
                        d.original = original;
                        if let Some(latest) = latest {
                            clashes = d.rebase(latest);
                        }
                    });
                    restored.set(Some(note(&clashes)));
                }
                return;
            };
            // A form as it started has nothing worth keeping.
            let typed = (&now.object != start).then(|| {
                let json = serde_json::json!({
                    "object": now.object,
                    "original": now.original,
                });
                (here.clone(), json.to_string())
            });
            set_shown(typed);
        });
        on_cleanup(forget);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (draft, restored, note);
}

/// Nothing to keep any more (the form was saved, or is gone).
pub fn forget() {
    #[cfg(feature = "hydrate")]
    set_shown(None);
}

/// Writes the shown form's draft where the page loaded again will find it, if the
/// page is still at the form's address. Called by the panic hook just before the
/// reload: reads nothing reactive.
#[cfg(feature = "hydrate")]
pub fn save_for_reload() {
    let Some((at, json)) = SHOWN.with(|s| s.try_borrow().ok().and_then(|s| s.clone())) else {
        return;
    };
    if address().as_deref() != Some(at.as_str()) {
        return;
    }
    if let Some(storage) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
        // Stamped now: the reload, not the last edit, starts the half minute.
        let now = js_sys::Date::now();
        let _ = storage.set_item(KEY, &format!("{at}\n{now}\n{json}"));
    }
}

/// The draft kept for `here` within the last half minute, removed from storage either
/// way: `(object, original)`.
#[cfg(feature = "hydrate")]
fn take_kept(here: &str) -> Option<(serde_json::Value, Option<serde_json::Value>)> {
    use serde_json::Value;

    let storage = web_sys::window()?.session_storage().ok().flatten()?;
    let stored = storage.get_item(KEY).ok().flatten()?;
    let _ = storage.remove_item(KEY);
    let (at, rest) = stored.split_once('\n')?;
    let (written, json) = rest.split_once('\n')?;
    let written: f64 = written.parse().ok()?;
    if at != here || js_sys::Date::now() - written > FRESH_FOR_MS {
        return None;
    }
    let mut kept: Value = serde_json::from_str(json).ok()?;
    let original = match kept.get_mut("original").map(Value::take) {
        Some(Value::Null) | None => None,
        Some(original) => Some(original),
    };
    Some((kept.get_mut("object")?.take(), original))
}
