//! In a wasm build, keeps the linker from merging data segments: merged, the strings
//! and tables of the pages split off by `cargo leptos build --split` stay in the main
//! bundle (cargo-leptos#679), which every page downloads.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch.starts_with("wasm") {
        println!("cargo::rustc-link-arg-cdylib=--no-merge-data-segments");
    }
}
