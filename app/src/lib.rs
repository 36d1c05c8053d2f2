#![recursion_limit = "256"]
//! Portico's user interface. Everything here compiles both to wasm (feature `hydrate`)
//! and into the server (feature `ssr`); the server implements [`backend::Backend`] and
//! provides it as context, so no Kubernetes code lives in this crate.

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod base;
pub mod browser_store;
pub mod codec;
pub mod components;
pub mod error;
pub mod keys;
pub mod last_namespace;
pub mod live;
pub mod pages;
pub mod recent;
pub mod saved;
pub mod shell;
pub mod yaml;

pub use shell::{App, shell};

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        if info.to_string().contains(PAGE_PART_NOT_LOADED) {
            reload_for_new_release();
        }
    }));
    // The server writes the base path on <body>; everything else derives from it.
    let from_page = leptos::prelude::document()
        .body()
        .and_then(|b| b.get_attribute("data-base"))
        .and_then(|b| portico_core::base_path::BasePath::new(&b))
        .unwrap_or_default();
    if !from_page.is_root() {
        // One page, one Portico: server functions go under its base path.
        leptos::server_fn::client::set_server_url(Box::leak(
            from_page.as_str().to_string().into_boxed_str(),
        ));
    }
    let Some(body) = leptos::prelude::document().body() else {
        return;
    };
    // Leptos' executor, for the hydration task below (Err only when it already runs).
    let _ = any_spawner::Executor::init_wasm_bindgen();
    // Lazy routes (`pages::lazy`) need the asynchronous hydration: a page whose code
    // comes separately hydrates once it has arrived. Browser tests wait for the mark
    // set after it, when every part of the page is live.
    leptos::task::spawn_local(async move {
        let mounted = leptos::mount::hydrate_from_async(body.clone(), move || {
            base::provide(from_page);
            leptos::prelude::view! { <App/> }
        })
        .await;
        mounted.forget();
        let _ = body.set_attribute("data-hydrated", "true");
    });
}

/// The panic of a page part that could not be fetched (`wasm_split`'s words).
#[cfg(feature = "hydrate")]
const PAGE_PART_NOT_LOADED: &str = "load callback should succeed";

/// A tab left open across a release asks for page parts the new release no longer
/// has, or is sent live messages it cannot read, and the app cannot go on: the page is
/// loaded again, from the new release. At most once a minute, so a part that is
/// missing for good, or a message that cannot be read, does not loop.
#[cfg(feature = "hydrate")]
pub(crate) fn reload_for_new_release() {
    const KEY: &str = "portico-reloaded-at";
    let Some(window) = web_sys::window() else {
        return;
    };
    let now = js_sys::Date::now();
    let storage = window.session_storage().ok().flatten();
    let last = storage
        .as_ref()
        .and_then(|s| s.get_item(KEY).ok().flatten())
        .and_then(|v| v.parse::<f64>().ok());
    if last.is_some_and(|at| now - at < 60_000.0) {
        return;
    }
    if let Some(storage) = storage {
        let _ = storage.set_item(KEY, &now.to_string());
    }
    // A form being filled in comes back as it was.
    pages::create::save_for_reload();
    let _ = window.location().reload();
}
