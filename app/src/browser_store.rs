//! Lists kept in this browser's local storage (recent objects, saved views): nothing
//! leaves the browser. On the server, and where storage is refused, nothing is kept.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The list kept under `key`; empty when none is, or it cannot be read.
pub fn load<T: DeserializeOwned>(key: &str) -> Vec<T> {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.local_storage().ok().flatten())
            .and_then(|s| s.get_item(key).ok().flatten())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = key;
        Vec::new()
    }
}

/// Keeps `list` under `key` (an empty list removes the key).
pub fn store<T: Serialize>(key: &str, list: &[T]) {
    #[cfg(feature = "hydrate")]
    if let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) {
        if list.is_empty() {
            let _ = storage.remove_item(key);
        } else if let Ok(text) = serde_json::to_string(list) {
            let _ = storage.set_item(key, &text);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (key, list);
}
