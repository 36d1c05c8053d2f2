#![recursion_limit = "256"]
//! Portico's user interface. Everything here compiles both to wasm (feature `hydrate`)
//! and into the server (feature `ssr`); the server implements [`backend::Backend`] and
//! provides it as context, so no Kubernetes code lives in this crate.

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod base;
pub mod components;
pub mod error;
pub mod live;
pub mod pages;
pub mod shell;

pub use shell::{App, shell};

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
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
    leptos::mount::hydrate_body(move || {
        base::provide(from_page);
        leptos::prelude::view! { <App/> }
    });
}
