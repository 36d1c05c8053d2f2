//! Lists kept in this browser's local storage (recent objects, saved views): nothing
//! leaves the browser. On the server, and where storage is refused, nothing is kept.
//! Each person's lists are kept apart (under keys naming who was signed in), so the
//! next person on a shared browser does not see them, and finds their own again when
//! they sign in.

use leptos::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Who the page is for, as the server names them (their Kubernetes user name; empty
/// where nobody signs in). The server provides it; the page reads it from `<body>`.
#[derive(Debug, Clone, Default)]
pub struct KeptFor(pub String);

/// The `data-kept-for` the server writes on `<body>`.
pub fn kept_for() -> String {
    #[cfg(feature = "ssr")]
    {
        use_context::<KeptFor>().map(|k| k.0).unwrap_or_default()
    }
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    {
        document()
            .body()
            .and_then(|body| body.get_attribute("data-kept-for"))
            .unwrap_or_default()
    }
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    {
        String::new()
    }
}

/// `key` for the person signed in.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
fn personal(key: &str) -> String {
    let person = kept_for();
    if person.is_empty() {
        key.to_string()
    } else {
        format!("{key}@{person}")
    }
}

/// The list kept under `key`; empty when none is, or it cannot be read.
pub fn load<T: DeserializeOwned>(key: &str) -> Vec<T> {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.local_storage().ok().flatten())
            .and_then(|s| s.get_item(&personal(key)).ok().flatten())
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
        let key = personal(key);
        if list.is_empty() {
            let _ = storage.remove_item(&key);
        } else if let Ok(text) = serde_json::to_string(list) {
            let _ = storage.set_item(&key, &text);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (key, list);
}
