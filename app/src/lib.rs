#![recursion_limit = "256"]
//! Portico's user interface. Everything here compiles both to wasm (feature `hydrate`)
//! and into the server (feature `ssr`); the server implements [`backend::Backend`] and
//! provides it as context, so no Kubernetes code lives in this crate.

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod components;
pub mod live;
pub mod model;
pub mod pages;
pub mod schema;
pub mod shell;
pub mod table;

pub use shell::{App, shell};

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
