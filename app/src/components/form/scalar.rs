//! Single-value widgets: text, numbers, int-or-string, a checkbox, a choice of values.
//! Invalid input is kept as typed (a number field holding "12a" stays "12a") so the
//! validation message can say what to change and nothing the user typed is lost.

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::{Field, Widget};
use portico_core::schema::text::{shown, typed_int_or_string, typed_number};

use super::model::use_form;

#[component]
pub fn ScalarControl(field: Field, path: FieldPath, id: String) -> AnyView {
    let form = use_form();
    let path_read = path.clone();
    let path_write = path;
    let integer = matches!(field.widget, Widget::Integer);
    match field.widget {
        Widget::Integer | Widget::Number => {
            view! {
                <input id=id type="text" inputmode="numeric" class="short"
                    prop:value=move || shown(form.read(&path_read).as_ref())
                    on:input:target=move |ev| form.write(&path_write, typed_number(&ev.target().value(), integer))
                />
            }
            .into_any()
        }
        Widget::IntOrString => view! {
            <input id=id type="text" class="short" placeholder=field.placeholder.clone()
                prop:value=move || shown(form.read(&path_read).as_ref())
                on:input:target=move |ev| {
                    let previous = form.read(&path_write);
                    form.write(&path_write, typed_int_or_string(&ev.target().value(), previous.as_ref()));
                }
            />
        }
        .into_any(),
        Widget::Boolean => view! {
            <input id=id type="checkbox"
                prop:checked=move || form.read(&path_read).and_then(|v| v.as_bool()).unwrap_or(false)
                on:change:target=move |ev| form.write(&path_write, Some(Value::Bool(ev.target().checked())))
            />
        }
        .into_any(),
        Widget::Select(options) => {
            // The empty choice says what leaving it empty means.
            let unset = match &field.default {
                Some(Value::String(d)) => format!("(not set: {d} by default)"),
                Some(d) => format!("(not set: {d} by default)"),
                None => "(not set)".to_string(),
            };
            view! {
            <select id=id
                prop:value=move || form.read(&path_read).map(|v| v.to_string()).unwrap_or_default()
                on:change:target=move |ev| {
                    let raw = ev.target().value();
                    form.write(&path_write, serde_json::from_str(&raw).ok());
                }
            >
                <option value="">{unset}</option>
                {options.into_iter().map(|o| {
                    let shown = match &o { Value::String(s) => s.clone(), other => other.to_string() };
                    view! { <option value=o.to_string()>{shown}</option> }
                }).collect_view()}
            </select>
            }
            .into_any()
        }
        // Text, dates, bytes (and any kind a section widget handles, never sent here).
        ref other => {
            let placeholder = match other {
                Widget::DateTime => "2030-01-01T00:00:00Z",
                Widget::Bytes => "base64",
                _ => "",
            };
            view! {
                <input id=id type="text" placeholder=placeholder
                    prop:value=move || shown(form.read(&path_read).as_ref())
                    on:input:target=move |ev| {
                        let t = ev.target().value();
                        form.write(&path_write, (!t.is_empty()).then_some(Value::String(t)));
                    }
                />
            }
            .into_any()
        }
    }
}
