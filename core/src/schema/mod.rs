//! openAPIV3Schema → form model and client-side validation. Pure functions, no I/O,
//! compiled into both the wasm bundle and the server; total on any input.

pub mod draft;
pub mod field_path;
pub mod form;
pub mod name_rule;
pub mod openapi;
pub mod text;
pub mod validate;
pub mod value;

#[cfg(test)]
mod tests;
