//! One field: label, widget, help, constraints, rules and its messages. Objects,
//! lists and maps are sections with a heading that opens and closes them, rendered
//! only once opened.

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::{Field, Widget};
use portico_core::schema::text::first_sentence_end;
use portico_core::schema::value::get;

use super::collection::{ListControl, MapControl};
use super::model::{has_value, leads_to, use_form};
use super::object::{ChoiceControl, ObjectControl};
use super::scalar::ScalarControl;
use super::yaml::YamlControl;

/// A closed section's one line: what is set inside it.
fn summary(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "not set".into(),
        Some(Value::Object(m)) if m.is_empty() => "empty".into(),
        Some(Value::Object(m)) => {
            let names: Vec<&str> = m.keys().map(String::as_str).take(4).collect();
            let more = if m.len() > 4 { ", …" } else { "" };
            format!("{}{more}", names.join(", "))
        }
        Some(Value::Array(a)) if a.len() == 1 => "1 item".into(),
        Some(Value::Array(a)) => format!("{} items", a.len()),
        Some(other) => other.to_string(),
    }
}

/// A field's documentation: its first sentence shown, the rest one click away.
fn doc_view(help: &str) -> Option<AnyView> {
    let help = help.trim();
    if help.is_empty() {
        return None;
    }
    let (first, rest) = help.split_at(first_sentence_end(help));
    let rest = rest.trim();
    Some(if rest.is_empty() {
        view! { <p class="field-help">{first.to_string()}</p> }.into_any()
    } else {
        view! {
            <details class="field-doc">
                <summary class="field-help">{first.to_string()}" "<span class="more">"more"</span></summary>
                <p class="field-help full">{rest.to_string()}</p>
            </details>
        }
        .into_any()
    })
}

/// The messages to show on the field at `path` now.
#[component]
pub fn Messages(path: String) -> impl IntoView {
    let form = use_form();
    form.place(&path);
    let mine = move || form.shown_errors(&path);
    view! {
        <For each=mine key=|m| m.clone() let:message>
            <p class="field-error" role="alert">{message}</p>
        </For>
    }
}

/// One field: label, widget, help, constraints, rules and its messages.
#[component]
pub fn FieldView(field: Field, path: FieldPath) -> AnyView {
    let form = use_form();
    let label = field.name.clone();
    let input_id = path.input_id();
    let text = path.text().to_string();
    let constraints = field.constraints.join(" · ");
    let rules = field.rules.clone();
    let default_note = field.default.as_ref().map(|d| format!("default {d}"));
    let required = field.required;
    let null_toggle = field.nullable.then(|| {
        let path_read = path.clone();
        let path_write = path.clone();
        view! {
            <label class="null-toggle" title="Send an explicit null">
                <input type="checkbox"
                    prop:checked=move || form.read(&path_read) == Some(Value::Null)
                    on:change:target=move |ev| {
                        let null = ev.target().checked().then_some(Value::Null);
                        form.write(&path_write, null);
                    }/>
                " null"
            </label>
        }
    });
    let nested = matches!(
        field.widget,
        Widget::Object(_) | Widget::List(_) | Widget::Map(_)
    );
    let details = view! {
        {doc_view(&field.help)}
        {(!constraints.is_empty() || default_note.is_some()).then(|| view! {
            <p class="field-constraints">
                {constraints.clone()}
                {default_note.map(|d| view! { <span class="default-note">{d}</span> })}
            </p>
        })}
        {(!rules.is_empty()).then(|| view! {
            <ul class="field-rules">
                {rules.into_iter().map(|r| {
                    let shown = if !r.message.is_empty() {
                        r.message
                    } else {
                        // The server words this message itself; the rule says what it checks.
                        r.rule.clone()
                    };
                    view! { <li title=r.rule>{shown}</li> }
                }).collect_view()}
            </ul>
        })}
    };
    let touch_path = text.clone();
    let touch = move |_| form.touch(&touch_path);
    // The spec and list items are open; other sections when required, set, or on the
    // way to a field the person asked for.
    let always_open = !nested || label.is_empty() || text == "spec";
    if always_open {
        let control = control(&field, &path, &input_id);
        return view! {
            <div class="field" class:nested=nested data-path=text.clone() on:input=touch.clone() on:change=touch>
                {(!label.is_empty()).then(|| view! {
                    <label class="field-label" for=input_id.clone()>
                        {label.clone()}
                        {required.then(|| view! { <span class="req" title="required">" *"</span> })}
                    </label>
                })}
                {null_toggle}
                {control}
                <Messages path=text.clone()/>
                {details}
            </div>
        }
        .into_any();
    }
    let starts_open = required || form.value.with_untracked(|v| has_value(v, &path));
    let open = RwSignal::new(starts_open);
    let opener_path = text.clone();
    Effect::new(move |_| {
        let asked = form
            .focus
            .with(|f| f.as_deref().is_some_and(|f| leads_to(&opener_path, f)));
        let failing = form.reveal_all.get()
            && form
                .client_errors
                .with(|errors| errors.iter().any(|e| leads_to(&opener_path, &e.path)));
        if (asked || failing) && !open.get_untracked() {
            open.set(true);
        }
    });
    let path_summary = path.clone();
    let field_inside = StoredValue::new(field.clone());
    let path_inside = StoredValue::new(path);
    let body_id = format!("{input_id}-body");
    view! {
        <div class="field nested section-field" class:open=move || open.get() data-path=text.clone() on:input=touch.clone() on:change=touch>
            <button type="button" class="section-toggle" id=input_id.clone()
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                <span class="caret" aria-hidden="true">{move || if open.get() { "▾" } else { "▸" }}</span>
                <span class="field-label">{label.clone()}
                    {required.then(|| view! { <span class="req" title="required">" *"</span> })}
                </span>
                <span class="section-summary">{move || form.value.with(|v| summary(get(v, path_summary.segs())))}</span>
            </button>
            {null_toggle}
            <Messages path=text.clone()/>
            {details}
            <Show when=move || open.get()>
                {
                    let id = body_id.clone();
                    field_inside.with_value(|f| path_inside.with_value(|p| control(f, p, &id)))
                }
            </Show>
        </div>
    }
    .into_any()
}

/// How a section draws a field inside it: given to the section widgets, so that the
/// tree recurses through this one function rather than files importing each other.
fn child(field: Field, path: FieldPath) -> AnyView {
    view! { <FieldView field path/> }.into_any()
}

/// The widget for a field's kind of value.
fn control(field: &Field, path: &FieldPath, id: &str) -> AnyView {
    let path = path.clone();
    let id = id.to_string();
    match &field.widget {
        Widget::Object(_) => view! { <ObjectControl field=field.clone() path child/> }.into_any(),
        Widget::List(item) => view! { <ListControl item=(**item).clone() path child/> }.into_any(),
        Widget::Map(value) => {
            view! { <MapControl value_field=(**value).clone() path child/> }.into_any()
        }
        Widget::Choice(options) => {
            view! { <ChoiceControl options=options.clone() path id child/> }.into_any()
        }
        Widget::Yaml(reason) => view! { <YamlControl reason=reason.clone() path id/> }.into_any(),
        _ => view! { <ScalarControl field=field.clone() path id/> }.into_any(),
    }
}
