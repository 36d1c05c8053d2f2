//! The object a form edits, as reactive cells: where it starts (an object read for an
//! edit, what was typed under another version, or a new object with the schema's
//! defaults and whatever a link filled in), and the one way to change it.

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_query_map};
use serde_json::Value;

use portico_core::payload::FormSpec;
use portico_core::resource::{ObjectKey, ResourceRef};
use portico_core::schema::draft::Draft;
use portico_core::schema::form::{Field, initial_value, linked_value};
use portico_core::schema::value::{Seg, set};

/// The draft's cells. `value` is the whole object; name and namespace are read
/// from it.
#[derive(Clone, Copy)]
pub struct DraftCells {
    pub value: RwSignal<Value>,
    original: RwSignal<Option<Value>>,
    namespaced: bool,
    /// An existing object is being edited (its name is fixed).
    pub editing: bool,
    pub name: Memo<String>,
    pub namespace: Memo<Option<String>>,
}

impl DraftCells {
    /// The draft as it is now, tracked.
    pub fn now(&self) -> Draft {
        Draft {
            object: self.value.get(),
            original: self.original.get(),
            namespaced: self.namespaced,
        }
    }

    /// Changes the draft through [`Draft`]'s own operations.
    pub fn change(&self, f: impl FnOnce(&mut Draft)) {
        let mut draft = Draft {
            object: self.value.get_untracked(),
            original: self.original.get_untracked(),
            namespaced: self.namespaced,
        };
        f(&mut draft);
        self.value.set(draft.object);
        self.original.set(draft.original);
    }

    /// The object the draft edits (or will create), as endpoints address it.
    pub fn key(&self, resource: ResourceRef) -> ObjectKey {
        ObjectKey {
            resource,
            namespace: self.namespace.get_untracked(),
            name: self.name.get_untracked(),
        }
    }

    /// Sets the text at a dotted key such as `spec.choice`.
    pub fn set_text(&self, key: &str, text: String) {
        let segs = dotted(key);
        self.change(|d| set(&mut d.object, &segs, Some(Value::String(text))));
    }
}

fn dotted(key: &str) -> Vec<Seg> {
    key.split('.').map(|k| Seg::Key(k.to_string())).collect()
}

/// Starts the draft, and lists the fields a link filled in (`?spec.choice=mysql`),
/// which the page must name: a link from anywhere can pre-fill a form, and the
/// person must see what it chose for them.
pub fn use_draft(
    spec: &FormSpec,
    form: &Field,
    existing: Option<Value>,
    carry: Option<StoredValue<Option<Draft>>>,
) -> (DraftCells, Vec<(String, String)>) {
    let namespaced = spec.namespaced;
    let (ns_param, _) = query_signal::<String>("ns");
    let mut prefilled: Vec<(String, String)> = Vec::new();
    let start = match (existing, carry.and_then(|c| c.get_value())) {
        (Some(object), _) => Draft::edit(object, namespaced),
        (None, Some(mut typed)) => {
            typed.set_api_version(&spec.api_version);
            typed
        }
        (None, None) => {
            let namespace = ns_param.get_untracked().unwrap_or_else(|| "default".into());
            let mut draft = Draft::create(
                &spec.api_version,
                &spec.kind,
                namespaced,
                &namespace,
                initial_value(form),
            );
            // Links may fill fields in: `?spec.choice=mysql` (the Provision page does).
            use_query_map().with_untracked(|q| {
                for (key, text) in q {
                    // `metadata.name` too: reattaching kept volumes needs the old name.
                    if key.starts_with("spec.") || key == "metadata.name" {
                        set(
                            &mut draft.object,
                            &dotted(key),
                            Some(linked_value(form, key, text)),
                        );
                        prefilled.push((key.to_string(), text.to_string()));
                    }
                }
            });
            draft
        }
    };
    let editing = start.editing();
    let value = RwSignal::new(start.object);
    let cells = DraftCells {
        value,
        original: RwSignal::new(start.original),
        namespaced,
        editing,
        name: Memo::new(move |_| value.with(|v| Draft::name_of(v).to_string())),
        namespace: Memo::new(move |_| {
            value.with(|v| Draft::namespace_of(v, namespaced).map(str::to_string))
        }),
    };
    // What was typed survives a switch to another version of the same kind.
    if let Some(carry) = carry {
        Effect::new(move |_| carry.set_value(Some(cells.now())));
    }
    (cells, prefilled)
}
