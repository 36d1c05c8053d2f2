//! YAML in the browser, fetched the first time a page shows or reads YAML: serde_yaml's
//! emitter and parser (unsafe-libyaml) are about 70 KB of wasm, which a form that is
//! filled in only as a form need not download (`cargo leptos build --split`). On the
//! server these run at once. Called only from the browser's own work (effects, event
//! handlers), so the server never marks their part for preloading.

use leptos::prelude::*;
use serde_json::Value;

/// `value` as YAML text.
#[lazy]
pub fn to_yaml(value: Value) -> String {
    serde_yaml::to_string(&value).unwrap_or_default()
}

/// YAML text as a value, or why it is not YAML (the parser's words).
#[lazy]
pub fn from_yaml(text: String) -> Result<Value, String> {
    serde_yaml::from_str(&text).map_err(|e| e.to_string())
}
