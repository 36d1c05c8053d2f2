//! The form's state, in context for every field: the object being edited, the
//! problems found by the browser and the API server, what has been touched, and
//! which field was asked for.

use std::collections::{BTreeMap, HashSet};

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::Field;
use portico_core::schema::validate::FieldError;
use portico_core::schema::value::{get, set};

/// The form's state, shared by every field through the context (`provide`, then
/// [`use_form`] in any field or widget).
#[derive(Clone, Copy)]
pub struct FormModel {
    pub value: RwSignal<Value>,
    /// Problems the browser found: shown on a field once it has been touched, and on
    /// every field after a submit attempt.
    pub client_errors: Signal<Vec<FieldError>>,
    /// The API server's causes (dry run): always shown.
    pub server_errors: Signal<Vec<FieldError>>,
    /// Paths of fields the person has typed in or changed.
    pub touched: RwSignal<HashSet<String>>,
    /// Set by a submit attempt: every problem is shown, and sections holding one open.
    pub reveal_all: RwSignal<bool>,
    /// A field to bring into view (from the search or a submit): the sections on its
    /// way open.
    pub focus: RwSignal<Option<String>>,
    /// YAML typed and still being read (its parser is fetched on first use): a submit
    /// waits for it, so what was typed is what is sent.
    pub yaml_reading: RwSignal<usize>,
    /// The fields on the page that show their own messages, by path (how many views
    /// of each): the API server's causes for any other path go to the top of the form.
    pub placed: RwSignal<BTreeMap<String, usize>>,
}

impl FormModel {
    pub fn new(
        value: RwSignal<Value>,
        client_errors: Signal<Vec<FieldError>>,
        server_errors: Signal<Vec<FieldError>>,
    ) -> Self {
        Self {
            value,
            client_errors,
            server_errors,
            touched: RwSignal::new(HashSet::new()),
            reveal_all: RwSignal::new(false),
            focus: RwSignal::new(None),
            yaml_reading: RwSignal::new(0),
            placed: RwSignal::new(BTreeMap::new()),
        }
    }

    /// Says that a view of the field at `path` shows its messages, until the view goes.
    pub fn place(&self, path: &str) {
        self.placed
            .update(|placed| *placed.entry(path.to_string()).or_default() += 1);
        let (placed, path) = (self.placed, path.to_string());
        on_cleanup(move || {
            placed.try_update(|placed| {
                if let Some(count) = placed.get_mut(&path) {
                    *count -= 1;
                    if *count == 0 {
                        placed.remove(&path);
                    }
                }
            });
        });
    }

    /// The API server's causes no field on the page shows: for the top of the form.
    pub fn unplaced_errors(&self) -> Vec<FieldError> {
        self.placed.with(|placed| {
            self.server_errors.with(|errors| {
                errors
                    .iter()
                    .filter(|e| !placed.contains_key(&e.path))
                    .cloned()
                    .collect()
            })
        })
    }

    /// Makes this the form every field below reads and writes.
    pub fn provide(self) {
        provide_context(self);
    }

    /// The value at `path`, tracked (`None` once the form is gone).
    pub fn read(&self, path: &FieldPath) -> Option<Value> {
        self.value
            .try_with(|v| get(v, path.segs()).cloned())
            .flatten()
    }

    /// Sets (or with `None` removes) the value at `path`.
    pub fn write(&self, path: &FieldPath, new: Option<Value>) {
        self.value.update(|v| set(v, path.segs(), new));
    }

    /// The messages to show on `path` now; none once the form is gone (a field's view
    /// may be disposed after the form's state, as the page is left).
    pub fn shown_errors(&self, path: &str) -> Vec<String> {
        self.try_shown_errors(path).unwrap_or_default()
    }

    fn try_shown_errors(&self, path: &str) -> Option<Vec<String>> {
        let shown = self.reveal_all.try_get()? || self.touched.try_with(|t| t.contains(path))?;
        let mut out: Vec<String> = if shown {
            self.client_errors.try_with(|errors| {
                errors
                    .iter()
                    .filter(|e| e.path == path)
                    .map(|e| e.message.clone())
                    .collect()
            })?
        } else {
            vec![]
        };
        // Its own causes, and those of paths under it that no field shows, with the
        // rest of their path (beside the nearest field that fits).
        self.placed.try_with(|placed| {
            self.server_errors.try_with(|errors| {
                for e in errors {
                    let message = if e.path == path {
                        e.message.clone()
                    } else if nearest_placed(&e.path, placed) == Some(path) {
                        format!(
                            "{}: {}",
                            &e.path[path.len()..].trim_start_matches('.'),
                            e.message
                        )
                    } else {
                        continue;
                    };
                    if !out.contains(&message) {
                        out.push(message);
                    }
                }
            })
        })??;
        Some(out)
    }

    pub fn touch(&self, path: &str) {
        if !self.touched.with_untracked(|t| t.contains(path)) {
            self.touched.update(|t| {
                t.insert(path.to_string());
            });
        }
    }

    /// Shows every problem and brings the first into view.
    pub fn reveal_errors(&self) {
        self.reveal_all.set(true);
        let first = self
            .client_errors
            .with_untracked(|errors| errors.first().map(|e| e.path.clone()));
        if let Some(path) = first {
            self.bring_into_view(path);
        }
    }

    /// Opens the sections on the way to `path` and scrolls to it.
    pub fn bring_into_view(&self, path: String) {
        self.focus.set(Some(path.clone()));
        // Sections open in effects; scroll once they have rendered.
        set_timeout(
            move || scroll_to(&path),
            std::time::Duration::from_millis(60),
        );
    }
}

/// Whether something is set at `path` (an empty object or list counts as nothing).
pub fn has_value(value: &Value, path: &FieldPath) -> bool {
    match get(value, path.segs()) {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

/// Draws a field inside a section: the section widgets recurse through it.
pub type DrawField = fn(Field, FieldPath) -> AnyView;

/// The form of the page, provided by it ([`FormModel::provide`]).
pub fn use_form() -> FormModel {
    expect_context::<FormModel>()
}

/// `spec.items[3].name` → `spec.items[*].name`: how the form model names a field
/// whatever item or entry it is in.
fn generic_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_brackets = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_brackets = true;
                out.push_str("[*]");
            }
            ']' => in_brackets = false,
            _ if in_brackets => {}
            _ => out.push(c),
        }
    }
    out
}

/// Whether `target` is `path` or lies inside it (both in generic form).
pub(super) fn leads_to(path: &str, target: &str) -> bool {
    let path = generic_path(path);
    let target = generic_path(target);
    target == path
        || target
            .strip_prefix(path.as_str())
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// Scrolls to the field at `path`, or the nearest section holding it that is shown.
#[cfg(not(feature = "hydrate"))]
fn scroll_to(_path: &str) {}

/// Scrolls to the field at `path`, or the nearest section holding it that is shown.
#[cfg(feature = "hydrate")]
fn scroll_to(path: &str) {
    let document = document();
    let mut candidate = generic_path(path).replace("[*]", "[0]");
    loop {
        let selector = format!("[data-path=\"{}\"]", candidate.replace('"', ""));
        if let Ok(Some(element)) = document.query_selector(&selector) {
            element.scroll_into_view();
            if let Ok(Some(input)) = element.query_selector("input, select, textarea")
                && let Ok(input) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(input)
            {
                let _ = input.focus();
            }
            return;
        }
        match candidate.rfind(['.', '[']) {
            Some(cut) if cut > 0 => candidate.truncate(cut),
            _ => return,
        }
    }
}

/// The path of the field holding `path` (`spec.a.b` → `spec.a`, `spec.l[k.x]` →
/// `spec.l`), `None` at the top.
fn parent_path(path: &str) -> Option<&str> {
    let cut = if path.ends_with(']') {
        path.rfind('[')?
    } else {
        path.rfind(['.', '['])?
    };
    Some(&path[..cut])
}

/// The nearest field above `path` that shows messages, for a path no field shows.
fn nearest_placed<'a>(path: &'a str, placed: &BTreeMap<String, usize>) -> Option<&'a str> {
    if placed.contains_key(path) {
        return None;
    }
    let mut at = parent_path(path);
    while let Some(parent) = at {
        if placed.contains_key(parent) {
            return Some(parent);
        }
        at = parent_path(parent);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_lead_into_sections_whatever_the_item() {
        assert_eq!(generic_path("spec.a[3].b[key].c"), "spec.a[*].b[*].c");
        assert!(leads_to("spec.a", "spec.a[*].b"));
        assert!(leads_to("spec.a[0]", "spec.a[*].b"));
        assert!(leads_to("spec.a", "spec.a"));
        assert!(!leads_to("spec.a", "spec.ab"));
    }

    #[test]
    fn a_cause_no_field_shows_goes_to_the_nearest_field_above_it() {
        let placed: BTreeMap<String, usize> =
            [("spec".to_string(), 1), ("spec.backup".to_string(), 1)].into();
        assert_eq!(
            nearest_placed("spec.backup.target.bucket", &placed),
            Some("spec.backup")
        );
        assert_eq!(
            nearest_placed("spec.labels[app.kubernetes.io/name]", &placed),
            Some("spec")
        );
        assert_eq!(
            nearest_placed("spec.backup", &placed),
            None,
            "shown where it is"
        );
        assert_eq!(nearest_placed("metadata.labels[x]", &placed), None);
        assert_eq!(parent_path("spec.items[3]"), Some("spec.items"));
        assert_eq!(parent_path("spec"), None);
    }
}
