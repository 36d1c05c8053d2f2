//! The namespace the person last worked in, kept in the browser (local storage): a
//! form starts there rather than in `default`, which is rarely anyone's, and a person
//! whose access lists no namespaces need not type theirs each time.

#[cfg(feature = "hydrate")]
const KEY: &str = "portico.namespace";

/// Keeps `namespace` as the last one worked in.
pub fn remember(namespace: &str) {
    #[cfg(feature = "hydrate")]
    if !namespace.is_empty()
        && let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten())
    {
        let _ = storage.set_item(KEY, namespace);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = namespace;
}

/// The namespace last worked in, in the browser; `None` on the server.
pub fn recall() -> Option<String> {
    #[cfg(feature = "hydrate")]
    {
        let storage = web_sys::window()?.local_storage().ok().flatten()?;
        storage
            .get_item(KEY)
            .ok()
            .flatten()
            .filter(|n| !n.is_empty())
    }
    #[cfg(not(feature = "hydrate"))]
    None
}
