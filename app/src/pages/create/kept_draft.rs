//! What was typed in a form survives the one reload the app makes itself: a page part
//! that cannot be fetched (a tab left open across a release) makes the app load the
//! page again (`crate::reload_for_new_release`). The form shown keeps a copy of its
//! draft in memory; only then is it written to the tab's session storage, and the
//! form of the same address takes it back once, after hydrating.

use leptos::prelude::*;
#[cfg(feature = "hydrate")]
use serde_json::Value;

use super::draft::DraftCells;

/// Where the draft waits across the reload (this tab only, removed when read).
#[cfg(feature = "hydrate")]
const KEY: &str = "portico-kept-draft";

#[cfg(feature = "hydrate")]
thread_local! {
    /// The draft of the form on the page, as JSON: ready before a panic, which may
    /// come while the form's own cells are being changed.
    static SHOWN: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The page's address, which a kept draft must match to be taken back.
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
/// draft kept for this address by a reload; `restored` is then set.
pub fn keep_across_reload(draft: DraftCells, restored: RwSignal<bool>) {
    #[cfg(feature = "hydrate")]
    {
        let kept = take_kept();
        Effect::new(move |first: Option<()>| {
            if first.is_none()
                && let Some((object, original)) = kept.clone()
            {
                draft.change(|d| {
                    d.object = object;
                    d.original = original;
                });
                restored.set(true);
            }
            let now = draft.now();
            let json = serde_json::json!({
                "address": address(),
                "object": now.object,
                "original": now.original,
            });
            SHOWN.with(|s| {
                if let Ok(mut shown) = s.try_borrow_mut() {
                    *shown = Some(json.to_string());
                }
            });
        });
        on_cleanup(|| {
            SHOWN.with(|s| {
                if let Ok(mut shown) = s.try_borrow_mut() {
                    *shown = None;
                }
            });
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (draft, restored);
}

/// Writes the shown form's draft where the page loaded again will find it. Called by
/// the panic hook just before the reload: reads nothing reactive.
#[cfg(feature = "hydrate")]
pub fn save_for_reload() {
    let Some(json) = SHOWN.with(|s| s.try_borrow().ok().and_then(|s| s.clone())) else {
        return;
    };
    if let Some(storage) = web_sys::window().and_then(|w| w.session_storage().ok().flatten()) {
        let _ = storage.set_item(KEY, &json);
    }
}

/// The draft kept for this address, removed from storage: `(object, original)`.
#[cfg(feature = "hydrate")]
fn take_kept() -> Option<(Value, Option<Value>)> {
    let storage = web_sys::window()?.session_storage().ok().flatten()?;
    let json = storage.get_item(KEY).ok().flatten()?;
    let _ = storage.remove_item(KEY);
    let mut kept: Value = serde_json::from_str(&json).ok()?;
    if kept.get("address").and_then(Value::as_str) != address().as_deref() {
        return None;
    }
    let original = match kept.get_mut("original").map(Value::take) {
        Some(Value::Null) | None => None,
        Some(original) => Some(original),
    };
    Some((kept.get_mut("object")?.take(), original))
}
