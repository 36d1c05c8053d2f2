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

/// `value` as YAML text, kept up to date in the browser (empty for `None`, which
/// downloads no YAML). An effect, not a resource: nothing of it runs while the server
/// renders, so no suspense waits on it. Only the latest value's text is kept. Not
/// generic, so each use adds no code of its own.
pub fn yaml_of(value: Signal<Option<Value>>) -> Signal<String> {
    let text = RwSignal::new(String::new());
    let asked = StoredValue::new(0_u64);
    Effect::new(move |_| {
        let value = value.get();
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

/// Fetches the YAML parser ahead (when a YAML editor gets focus), so that what is
/// typed there is read at once when it changes.
pub fn warm_reader() {
    leptos::task::spawn_local(async {
        let _ = from_yaml(String::new()).await;
    });
}

/// Reads `text` as YAML in the browser and hands `done` the outcome, unless a later
/// call (the person typed again) or the page going away came first. Blank text is
/// `None` and needs no YAML. `reading` counts the reads under way.
#[derive(Clone, Copy)]
pub struct YamlReader {
    asked: StoredValue<u64>,
    reading: RwSignal<usize>,
    done: Callback<Result<Option<Value>, String>>,
}

impl YamlReader {
    pub fn new(reading: RwSignal<usize>, done: Callback<Result<Option<Value>, String>>) -> Self {
        Self {
            asked: StoredValue::new(0),
            reading,
            done,
        }
    }

    pub fn read(&self, text: String) {
        let (asked, reading, done) = (self.asked, self.reading, self.done);
        let Some(this) = asked.try_update_value(|n| {
            *n += 1;
            *n
        }) else {
            return;
        };
        reading.update(|n| *n += 1);
        leptos::task::spawn_local(async move {
            let read = if text.trim().is_empty() {
                Ok(None)
            } else {
                from_yaml(text).await.map(Some)
            };
            if asked.try_get_value() == Some(this) {
                done.run(read);
            }
            reading.try_update(|n| *n = n.saturating_sub(1));
        });
    }
}
