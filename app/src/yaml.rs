//! YAML in the browser, fetched the first time a page shows or reads YAML: serde_yaml's
//! emitter and parser (unsafe-libyaml) are about 70 KB of wasm, which a form that is
//! filled in only as a form need not download (`cargo leptos build --split`). Called only
//! from the browser's own work (effects, event handlers): the server renders no YAML
//! text (a textarea's value is a property, not HTML) and never marks these parts for
//! preloading.

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

/// `value()` as YAML text, kept up to date in the browser (empty for `None`, which
/// downloads no YAML). An effect, not a resource: nothing of it runs while the server
/// renders, so no suspense waits on it. Only the latest value's text is kept.
pub fn yaml_of(value: impl Fn() -> Option<Value> + 'static) -> Signal<String> {
    let text = RwSignal::new(String::new());
    let asked = StoredValue::new(0_u64);
    Effect::new(move |_| {
        let value = value();
        let Some(this) = asked.try_update_value(|n| {
            *n += 1;
            *n
        }) else {
            return;
        };
        leptos::task::spawn_local(async move {
            let yaml = match value {
                None => String::new(),
                Some(value) => to_yaml(value).await,
            };
            // The page may have moved on (a newer value) or gone away meanwhile.
            if asked.try_get_value() == Some(this) {
                text.try_set(yaml);
            }
        });
    });
    text.into()
}
