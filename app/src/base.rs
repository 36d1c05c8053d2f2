//! The path Portico is served under (`--base-path`, e.g. `/portico`; empty at the
//! root). It travels as Leptos context: the server provides it to every render and
//! server function from its state, the browser from the page before hydration. Plain
//! `<a href>`s, EventSource URLs and assets go through [`url`]; the router's own
//! navigation adds the base by itself.

use leptos::prelude::{provide_context, use_context};
use portico_core::base_path::BasePath;

/// Makes `base` the base path of everything rendered under the current owner.
pub fn provide(base: BasePath) {
    provide_context(base);
}

/// The base path of the Portico rendering this (the root when none was provided).
pub fn current() -> BasePath {
    use_context::<BasePath>().unwrap_or_default()
}

/// The base path as a string (`""` at the root).
pub fn get() -> String {
    current().as_str().to_string()
}

/// `path` (absolute, from Portico's root) as the browser must request it.
pub fn url(path: &str) -> String {
    current().url(path)
}

/// A browser path (`location.pathname`) as Portico's own, without the base path.
pub fn strip(path: &str) -> String {
    let base = get();
    match path.strip_prefix(base.as_str()) {
        Some(rest) if !base.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
            if rest.is_empty() {
                "/".into()
            } else {
                rest.into()
            }
        }
        _ => path.to_string(),
    }
}
