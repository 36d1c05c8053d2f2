//! The objects a person opened last, kept in this browser (local storage) for the
//! palette: nothing leaves the browser, and only pages the person opened are kept.

use serde::{Deserialize, Serialize};

/// Objects kept, the latest first.
pub const KEPT: usize = 10;

#[cfg(feature = "hydrate")]
const KEY: &str = "portico.recent";

/// One object page opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub name: String,
    /// Its kind's plural and namespace, as the palette shows them beside the name.
    pub place: String,
    /// Its page, without the base path.
    pub path: String,
}

/// `opened` first, before the others (without an earlier visit of the same page).
pub fn with(mut kept: Vec<Opened>, opened: Opened) -> Vec<Opened> {
    kept.retain(|o| o.path != opened.path);
    kept.insert(0, opened);
    kept.truncate(KEPT);
    kept
}

/// Keeps `opened` as the latest object opened.
pub fn remember(opened: Opened) {
    #[cfg(feature = "hydrate")]
    if let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten())
        && let Ok(text) = serde_json::to_string(&with(recall(), opened))
    {
        let _ = storage.set_item(KEY, &text);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = opened;
}

/// The objects opened last, the latest first; none on the server.
pub fn recall() -> Vec<Opened> {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window()
            .and_then(|w| w.local_storage().ok().flatten())
            .and_then(|s| s.get_item(KEY).ok().flatten())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }
    #[cfg(not(feature = "hydrate"))]
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened(path: &str) -> Opened {
        Opened {
            name: path.into(),
            place: String::new(),
            path: path.into(),
        }
    }

    #[test]
    fn the_latest_comes_first_once_and_the_oldest_go() {
        let mut kept = Vec::new();
        for i in 0..12 {
            kept = with(kept, opened(&format!("/{i}")));
        }
        kept = with(kept, opened("/5"));
        let paths: Vec<&str> = kept.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(
            paths,
            ["/5", "/11", "/10", "/9", "/8", "/7", "/6", "/4", "/3", "/2"]
        );
    }
}
