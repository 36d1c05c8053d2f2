//! The objects a person opened last, kept in this browser (local storage) for the
//! palette and the home page: nothing leaves the browser, only pages the person
//! opened are kept, and "Forget" on the home page clears them.

use serde::{Deserialize, Serialize};

/// Objects kept, the latest first.
pub const KEPT: usize = 10;

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
    crate::browser_store::store(KEY, &with(recall(), opened));
}

/// The objects opened last, the latest first; none on the server.
pub fn recall() -> Vec<Opened> {
    crate::browser_store::load(KEY)
}

/// Forgets every object opened.
pub fn forget() {
    crate::browser_store::store::<Opened>(KEY, &[]);
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
