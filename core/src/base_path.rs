//! The path Portico is served under (`--base-path`, e.g. `/portico`; empty at the
//! root), normalised once so that nothing else checks it.

/// A normalised base path: `""` for the root, else `/a/b` (leading slash, no
/// trailing one).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct BasePath(String);

impl BasePath {
    /// Normalises a configured base path; `None` when it holds anything but path
    /// segments.
    pub fn new(raw: &str) -> Option<Self> {
        let trimmed = raw.trim().trim_matches('/');
        if trimmed.is_empty() {
            return Some(Self::default());
        }
        let ok = trimmed.split('/').all(|seg| {
            !seg.is_empty()
                && seg != "."
                && seg != ".."
                && seg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
        });
        ok.then(|| Self(format!("/{trimmed}")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// `path` (absolute, from Portico's root) as the browser must request it.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalize(raw: &str) -> Option<String> {
        BasePath::new(raw).map(|b| b.0)
    }

    #[test]
    fn base_paths_normalise_or_are_refused() {
        assert_eq!(normalize("").as_deref(), Some(""));
        assert_eq!(normalize("/").as_deref(), Some(""));
        assert_eq!(normalize("portico/").as_deref(), Some("/portico"));
        assert_eq!(
            normalize("/tools/portico").as_deref(),
            Some("/tools/portico")
        );
        assert_eq!(normalize("/a/../b"), None);
        assert_eq!(normalize("/a b"), None);
        assert_eq!(normalize("/a\"><script>"), None);
    }
}
