//! Finding things by a few typed letters: how well a name matches what was typed
//! ([`rank`]), shared by the palette's kinds (in the browser) and its objects (on the
//! server), and what the server answers ([`FoundObjects`]).
//!
//! A query is words. Every word must be found in the name: whole (best), at its start,
//! at the start of a part (after `-`, `.`, `_`, `/`, `:` or a space), anywhere, or as letters in
//! order (`mdb` in `my-database`, worst). A word `ns/` or `ns/name` also asks for the
//! namespace.

use serde::{Deserialize, Serialize};

use crate::resource::{ResourceKind, ResourceRef};

/// The longest query the server takes (longer ones are refused, not cut).
pub const MAX_QUERY_LEN: usize = 100;
/// Objects one answer carries at most, best first.
pub const MAX_RESULTS: usize = 50;

/// One object found by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundObject {
    pub resource: ResourceRef,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl FoundObject {
    /// Its page in Portico.
    pub fn page_path(&self) -> String {
        self.resource
            .object_path(self.namespace.as_deref(), &self.name)
    }
}

/// The server's answer to a query over the objects the person may list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FoundObjects {
    /// The best matches, at most [`MAX_RESULTS`].
    pub objects: Vec<FoundObject>,
    /// How many objects matched in all.
    pub matched: usize,
    /// How many objects were looked through.
    pub looked_through: usize,
    /// What was not looked through, and why (kinds or namespaces the person may not
    /// list, bounds reached), one sentence each.
    pub unseen: Vec<String>,
}

/// How well `name` (in `namespace`) matches `query`: lower is better, `None` when a
/// word is missing. An empty query matches nothing.
pub fn rank(query: &str, namespace: Option<&str>, name: &str) -> Option<u32> {
    let mut total = 0;
    let mut words = 0;
    for word in query.split_whitespace() {
        words += 1;
        total += match word.split_once('/') {
            Some((ns, rest)) => {
                let ns_rank = if ns.is_empty() {
                    0
                } else {
                    word_rank(ns, namespace?)?
                };
                let name_rank = if rest.is_empty() {
                    0
                } else {
                    word_rank(rest, name)?
                };
                ns_rank + name_rank
            }
            None => word_rank(word, name)?,
        };
    }
    (words > 0).then_some(total)
}

/// How well a kind matches `query`: each word against its kind, plural, short names
/// and group, the best of them. `None` when a word is in none.
pub fn rank_kind(query: &str, kind: &ResourceKind) -> Option<u32> {
    let mut total = 0;
    let mut words = 0;
    for word in query.split_whitespace() {
        words += 1;
        total += std::iter::once(kind.kind.as_str())
            .chain([kind.plural.as_str(), kind.group.as_str()])
            .chain(kind.short_names.iter().map(String::as_str))
            .filter_map(|name| word_rank(word, name))
            .min()?;
    }
    (words > 0).then_some(total)
}

/// How `word` is found in `hay`, case-insensitively: 0 whole, 1 at its start, 2 at
/// the start of a part, 3 anywhere, 10 and more as letters in order (more the wider
/// they are spread).
pub fn word_rank(word: &str, hay: &str) -> Option<u32> {
    let word = word.to_lowercase();
    let hay = hay.to_lowercase();
    if word.is_empty() {
        return Some(0);
    }
    if hay == word {
        return Some(0);
    }
    if hay.starts_with(&word) {
        return Some(1);
    }
    let mut anywhere = None;
    for (at, _) in hay.match_indices(&word) {
        let after_separator = hay
            .get(..at)
            .and_then(|before| before.chars().next_back())
            .is_some_and(|c| matches!(c, '-' | '.' | '_' | '/' | ':' | ' '));
        if after_separator {
            return Some(2);
        }
        anywhere = Some(3);
    }
    anywhere.or_else(|| in_order(&word, &hay).map(|spread| 10 + spread.min(1_000)))
}

/// The letters of `word` in `hay` in order, each taken as early as it comes: how many
/// other letters lie between the first and the last, or `None`.
fn in_order(word: &str, hay: &str) -> Option<u32> {
    let mut wanted = word.chars().peekable();
    let (mut first, mut last) = (None, 0);
    for (i, c) in hay.chars().enumerate() {
        if wanted.peek() == Some(&c) {
            wanted.next();
            first.get_or_insert(i);
            last = i;
        }
    }
    if wanted.peek().is_some() {
        return None;
    }
    let span = last - first.unwrap_or(0) + 1;
    u32::try_from(span.saturating_sub(word.chars().count())).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn better_matches_rank_lower() {
        let ranks: Vec<Option<u32>> = ["web", "web-1", "my-web", "cobweb", "w-e-b", "api"]
            .iter()
            .map(|name| rank("web", Some("team"), name))
            .collect();
        assert_eq!(
            ranks,
            vec![Some(0), Some(1), Some(2), Some(3), Some(12), None]
        );
    }

    #[test]
    fn every_word_must_match_and_case_does_not_matter() {
        assert_eq!(rank("My DB", None, "my-database"), Some(1 + 13));
        assert_eq!(rank("my cache", None, "my-database"), None);
    }

    #[test]
    fn a_slash_asks_for_the_namespace_too() {
        assert_eq!(rank("team/web", Some("team"), "web"), Some(0));
        assert_eq!(rank("team/", Some("team-a"), "anything"), Some(1));
        assert_eq!(rank("team/web", Some("other"), "web"), None);
        assert_eq!(rank("team/web", None, "web"), None);
        assert_eq!(rank("/web", None, "web"), Some(0));
    }

    #[test]
    fn kinds_match_by_any_of_their_names() {
        let kind = ResourceKind {
            group: "cert-manager.io".into(),
            kind: "Certificate".into(),
            plural: "certificates".into(),
            short_names: vec!["cert".into(), "certs".into()],
            namespaced: true,
            versions: vec!["v1".into()],
            flags: Default::default(),
        };
        assert_eq!(rank_kind("cert", &kind), Some(0));
        assert_eq!(rank_kind("certificate", &kind), Some(0));
        assert_eq!(rank_kind("manager cert", &kind), Some(2));
        assert_eq!(rank_kind("issuer", &kind), None);
    }

    #[test]
    fn nothing_typed_matches_nothing() {
        assert_eq!(rank("", None, "web"), None);
        assert_eq!(rank("   ", None, "web"), None);
    }

    #[test]
    fn letters_in_order_rank_by_their_spread() {
        assert_eq!(word_rank("mdb", "my-database"), Some(10 + 5));
        assert_eq!(word_rank("bdm", "my-database"), None);
    }

    #[test]
    fn any_text_ranks_without_panicking() {
        for (word, hay) in [("é", "Éa"), ("İ", "i̇"), ("ß", "SS"), ("\u{0}", "")] {
            let _ = rank(word, Some(hay), hay);
        }
    }
}
