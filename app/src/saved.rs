//! Views and objects a person saved (a table's URL under a name, or an object's page)
//! and which of them are starred, kept in this browser's local storage: the home page
//! and the palette list them. Only what the person saved is kept, and it never leaves
//! the browser: a view's URL holds nothing the person could not see in it, but which
//! views one keeps is one's own, and a Kubernetes object to keep them in would need a
//! write permission many people do not have.

use serde::{Deserialize, Serialize};

const KEY: &str = "portico.saved";
/// The most kept; saving one more forgets the oldest unstarred.
pub const KEPT: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub name: String,
    /// What it is, shown beside the name (`pods · team`).
    pub place: String,
    /// Its page and query, without the base path.
    pub path: String,
    #[serde(default)]
    pub starred: bool,
    /// Saved under a name ("Save view"), not only starred: unstarring keeps it.
    #[serde(default)]
    pub named: bool,
}

/// `saved` first, in place of one of the same path (two views may share a name);
/// the oldest unstarred go beyond [`KEPT`].
pub fn with(mut kept: Vec<Saved>, saved: Saved) -> Vec<Saved> {
    kept.retain(|s| s.path != saved.path);
    kept.insert(0, saved);
    while kept.len() > KEPT {
        match kept.iter().rposition(|s| !s.starred) {
            Some(i) => kept.remove(i),
            None => kept.remove(kept.len() - 1),
        };
    }
    kept
}

/// Starred first, each group as saved (latest first).
pub fn ordered(mut kept: Vec<Saved>) -> Vec<Saved> {
    kept.sort_by_key(|s| !s.starred);
    kept
}

pub fn recall() -> Vec<Saved> {
    ordered(crate::browser_store::load(KEY))
}

pub fn save(saved: Saved) {
    crate::browser_store::store(KEY, &with(crate::browser_store::load(KEY), saved));
}

/// The one kept for `path`, if any.
pub fn find(path: &str) -> Option<Saved> {
    crate::browser_store::load::<Saved>(KEY)
        .into_iter()
        .find(|s| s.path == path)
}

pub fn forget(path: &str) {
    let mut kept: Vec<Saved> = crate::browser_store::load(KEY);
    kept.retain(|s| s.path != path);
    crate::browser_store::store(KEY, &kept);
}

/// Stars `path` (keeping it as `name` and `place` when it was not kept), or unstars
/// it: one only starred is then forgotten, a view saved under a name stays saved.
pub fn toggle_star(path: &str, name: &str, place: &str) -> bool {
    let kept = find(path);
    let starred = !kept.as_ref().is_some_and(|s| s.starred);
    match kept {
        Some(saved) if !starred && !saved.named => forget(path),
        Some(saved) => save(Saved { starred, ..saved }),
        None => save(Saved {
            name: name.to_string(),
            place: place.to_string(),
            path: path.to_string(),
            starred,
            named: false,
        }),
    }
    starred
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(name: &str, starred: bool) -> Saved {
        Saved {
            name: name.into(),
            place: String::new(),
            path: format!("/{name}"),
            starred,
            named: true,
        }
    }

    #[test]
    fn a_path_saved_again_replaces_the_old_and_stars_survive_the_cut() {
        let mut kept = vec![saved("old", true)];
        for i in 0..KEPT {
            kept = with(kept, saved(&format!("v{i}"), false));
        }
        assert_eq!(kept.len(), KEPT);
        assert!(kept.iter().any(|s| s.name == "old"), "a starred one stays");
        assert!(
            !kept.iter().any(|s| s.name == "v0"),
            "the oldest unstarred goes"
        );
        let renamed = Saved {
            path: "/v3".into(),
            ..saved("three", false)
        };
        let kept = with(kept, renamed);
        assert_eq!(kept.iter().filter(|s| s.path == "/v3").count(), 1);
        assert_eq!(kept[0].name, "three");
        assert_eq!(ordered(kept.clone())[0].name, "old");
        // Another view under a name already used keeps both.
        let same_name = Saved {
            path: "/other".into(),
            ..saved("three", false)
        };
        assert_eq!(
            with(kept, same_name)
                .iter()
                .filter(|s| s.name == "three")
                .count(),
            2
        );
    }
}
