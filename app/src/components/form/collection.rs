//! Sections of many: a list's items (added, moved, removed) and a map's entries.

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::{Field, Widget, apply_defaults};
use portico_core::schema::text::shown;
use portico_core::schema::value::{Seg, get};

use super::model::{DrawField, use_form};

/// What a new item, entry or section starts as: empty, with the schema's defaults.
fn empty_value(field: &Field) -> Value {
    let mut value = match &field.widget {
        Widget::Object(_) | Widget::Map(_) => Value::Object(Default::default()),
        Widget::List(_) => Value::Array(vec![]),
        Widget::Integer | Widget::Number => Value::from(0),
        Widget::Boolean => Value::Bool(false),
        _ => Value::String(String::new()),
    };
    if let Some(default) = &field.default {
        value = default.clone();
    }
    apply_defaults(field, &mut value);
    value
}

fn get_mut<'a>(root: &'a mut Value, segs: &[Seg]) -> Option<&'a mut Value> {
    segs.iter().try_fold(root, |v, seg| match seg {
        Seg::Key(k) => v.get_mut(k.as_str()),
        Seg::Index(i) => v.get_mut(*i),
    })
}

/// A list's items, each with its key fields (`x-kubernetes-list-map-keys`) beside it.
#[component]
pub fn ListControl(item: Field, path: FieldPath, child: DrawField) -> AnyView {
    let form = use_form();
    let path_len = path.clone();
    let len = Memo::new(move |_| {
        form.read(&path_len)
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0)
    });
    let add_path = path.clone();
    let empty = empty_value(&item);
    let keys = item.list_keys.clone();
    view! {
        <div class="list">
            {move || {
                (0..len.get()).map(|i| {
                    let at = path.item(i);
                    let remove = at.clone();
                    let up = path.clone();
                    let key_path = at.clone();
                    let keys = keys.clone();
                    let row_key = (!keys.is_empty()).then(|| view! {
                        <span class="row-key mono">{move || form.value.with(|v| keys.iter().map(|k| {
                            format!("{k}: {}", shown(get(v, key_path.property(k).segs())))
                        }).collect::<Vec<_>>().join(" · "))}</span>
                    });
                    view! {
                        <div class="list-row">
                            {row_key}
                            {child(item.clone(), at)}
                            <div class="row-actions">
                                <button type="button" class="small-btn" title="Move up" disabled=i == 0
                                    on:click=move |_| form.value.update(|v| {
                                        if let Some(Value::Array(items)) = get_mut(v, up.segs()) && i > 0 { items.swap(i - 1, i); }
                                    })>"↑"</button>
                                <button type="button" class="small-btn" title="Remove"
                                    on:click=move |_| form.write(&remove, None)>"✕"</button>
                            </div>
                        </div>
                    }
                }).collect_view()
            }}
            <button type="button" class="small-btn add"
                on:click=move |_| form.write(&add_path.item(len.get_untracked()), Some(empty.clone()))
                >"+ Add item"</button>
        </div>
    }
    .into_any()
}

/// A map's entries (`additionalProperties`), and a key to add one.
#[component]
pub fn MapControl(value_field: Field, path: FieldPath, child: DrawField) -> AnyView {
    let form = use_form();
    let path_keys = path.clone();
    let keys = Memo::new(move |_| {
        form.read(&path_keys)
            .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()))
            .unwrap_or_default()
    });
    let new_key = RwSignal::new(String::new());
    let add_path = path.clone();
    let empty = empty_value(&value_field);
    view! {
        <div class="map">
            <For each=move || keys.get() key=|k| k.clone() let:key>
                {
                    let at = path.entry(&key);
                    let remove = at.clone();
                    view! {
                        <div class="map-row">
                            <span class="map-key mono">{key.clone()}</span>
                            {child(value_field.clone(), at)}
                            <button type="button" class="small-btn" title="Remove"
                                on:click=move |_| form.write(&remove, None)>"✕"</button>
                        </div>
                    }
                }
            </For>
            <div class="map-add">
                <input type="text" placeholder="new key" bind:value=new_key/>
                <button type="button" class="small-btn add"
                    on:click=move |_| {
                        let k = new_key.get_untracked();
                        if !k.is_empty() {
                            form.write(&add_path.entry(&k), Some(empty.clone()));
                            new_key.set(String::new());
                        }
                    }>"+ Add entry"</button>
            </div>
        </div>
    }
    .into_any()
}
