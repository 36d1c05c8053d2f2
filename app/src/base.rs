//! The path Portico is served under (`--base-path`, e.g. `/portico`; empty at the
//! root). Set once: by the server at start, in the browser from the page before
//! hydration. Plain `<a href>`s, EventSource URLs and assets go through [`url`]; the
//! router's own navigation adds the base by itself.

use std::sync::OnceLock;

static BASE: OnceLock<String> = OnceLock::new();

/// Normalises a configured base path: `""` for the root, else `/a/b` (leading slash,
/// no trailing one). `None` when it holds anything but path segments.
pub fn normalize(raw: &str) -> Option<String> {
    let trimmed = raw.trim().trim_matches('/');
    if trimmed.is_empty() {
        return Some(String::new());
    }
    let ok = trimmed.split('/').all(|seg| {
        !seg.is_empty()
            && seg != "."
            && seg != ".."
            && seg
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
    });
    ok.then(|| format!("/{trimmed}"))
}

/// Sets the base path (first call wins).
pub fn set(base: String) {
    let _ = BASE.set(base);
}

/// The base path (`""` at the root).
pub fn get() -> &'static str {
    BASE.get().map(String::as_str).unwrap_or("")
}

/// `path` (absolute, from Portico's root) as the browser must request it.
pub fn url(path: &str) -> String {
    format!("{}{path}", get())
}

#[cfg(test)]
mod tests {
    use super::*;

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
