//! Form fields generated from the schema's form model, bound to one JSON object.
//! Invalid input is kept as typed (a number field holding "12a" stays "12a") so the
//! validation message can say what to change and nothing the user typed is lost.
//! Optional sections start closed and are only rendered once opened: a 300-field
//! schema is a page of headings, not a wall, and nesting costs nothing until shown.

use std::collections::HashSet;

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::form::{Field, Widget, apply_defaults, shape_fits};
use portico_core::schema::text::{shown, typed_int_or_string, typed_number};
use portico_core::schema::validate::{FieldError, child_path};
use portico_core::schema::value::{Seg, get, set};

/// Everything a field needs besides its own description.
#[derive(Clone, Copy)]
pub struct FormState {
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
}

impl FormState {
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
        }
    }

    /// The messages to show on `path` now.
    pub fn shown_errors(&self, path: &str) -> Vec<String> {
        let shown = self.reveal_all.get() || self.touched.with(|t| t.contains(path));
        let mut out: Vec<String> = if shown {
            self.client_errors.with(|errors| {
                errors
                    .iter()
                    .filter(|e| e.path == path)
                    .map(|e| e.message.clone())
                    .collect()
            })
        } else {
            vec![]
        };
        self.server_errors.with(|errors| {
            for e in errors.iter().filter(|e| e.path == path) {
                if !out.contains(&e.message) {
                    out.push(e.message.clone());
                }
            }
        });
        out
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

/// `spec.items[3].name` → `spec.items[*].name`: how the form model names a field
/// whatever item or entry it is in.
pub fn generic_path(path: &str) -> String {
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
fn leads_to(path: &str, target: &str) -> bool {
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

fn read(state: FormState, segs: &[Seg]) -> Option<Value> {
    state.value.with(|v| get(v, segs).cloned())
}

fn write(state: FormState, segs: &[Seg], new: Option<Value>) {
    state.value.update(|v| set(v, segs, new));
}

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

/// Whether something is set at `segs` (an empty object or list counts as nothing).
fn has_value(value: &Value, segs: &[Seg]) -> bool {
    match get(value, segs) {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

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
    let cut = help
        .find(". ")
        .map(|i| i + 1)
        .into_iter()
        .chain(help.find('\n'))
        .min()
        .unwrap_or(help.len());
    let (first, rest) = help.split_at(cut);
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

#[component]
fn Messages(path: String, state: FormState) -> impl IntoView {
    let mine = move || state.shown_errors(&path);
    view! {
        <For each=mine key=|m| m.clone() let:message>
            <p class="field-error" role="alert">{message}</p>
        </For>
    }
}

/// One field: label, widget, help, constraints, rules and its messages. Objects,
/// lists and maps are sections with a heading that opens and closes them.
#[component]
pub fn FieldView(field: Field, segs: Vec<Seg>, path: String, state: FormState) -> AnyView {
    let label = field.name.clone();
    let input_id = format!("f-{}", path.replace(['.', '[', ']'], "-"));
    let constraints = field.constraints.join(" · ");
    let rules = field.rules.clone();
    let default_note = field.default.as_ref().map(|d| format!("default {d}"));
    let required = field.required;
    let null_toggle = field.nullable.then(|| {
        let segs_read = segs.clone();
        let segs_write = segs.clone();
        view! {
            <label class="null-toggle" title="Send an explicit null">
                <input type="checkbox"
                    prop:checked=move || read(state, &segs_read) == Some(Value::Null)
                    on:change:target=move |ev| {
                        let null = ev.target().checked().then_some(Value::Null);
                        write(state, &segs_write, null);
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
    let touch_path = path.clone();
    let touch = move |_| state.touch(&touch_path);
    // The spec and list items are open; other sections when required, set, or on the
    // way to a field the person asked for.
    let always_open = !nested || label.is_empty() || path == "spec";
    if always_open {
        let control = control(&field, &segs, &path, &input_id, state);
        return view! {
            <div class="field" class:nested=nested data-path=path.clone() on:input=touch.clone() on:change=touch>
                {(!label.is_empty()).then(|| view! {
                    <label class="field-label" for=input_id.clone()>
                        {label.clone()}
                        {required.then(|| view! { <span class="req" title="required">" *"</span> })}
                    </label>
                })}
                {null_toggle}
                {control}
                <Messages path=path.clone() state/>
                {details}
            </div>
        }
        .into_any();
    }
    let starts_open = required || state.value.with_untracked(|v| has_value(v, &segs));
    let open = RwSignal::new(starts_open);
    let opener_path = path.clone();
    Effect::new(move |_| {
        let asked = state
            .focus
            .with(|f| f.as_deref().is_some_and(|f| leads_to(&opener_path, f)));
        let failing = state.reveal_all.get()
            && state
                .client_errors
                .with(|errors| errors.iter().any(|e| leads_to(&opener_path, &e.path)));
        if (asked || failing) && !open.get_untracked() {
            open.set(true);
        }
    });
    let segs_summary = segs.clone();
    let field_inside = StoredValue::new(field.clone());
    let segs_inside = StoredValue::new(segs.clone());
    let path_inside = path.clone();
    let id_inside = input_id.clone();
    view! {
        <div class="field nested section-field" class:open=move || open.get() data-path=path.clone() on:input=touch.clone() on:change=touch>
            <button type="button" class="section-toggle" id=input_id.clone()
                aria-expanded=move || open.get().to_string()
                on:click=move |_| open.update(|o| *o = !*o)>
                <span class="caret" aria-hidden="true">{move || if open.get() { "▾" } else { "▸" }}</span>
                <span class="field-label">{label.clone()}
                    {required.then(|| view! { <span class="req" title="required">" *"</span> })}
                </span>
                <span class="section-summary">{move || state.value.with(|v| summary(get(v, &segs_summary)))}</span>
            </button>
            {null_toggle}
            <Messages path=path.clone() state/>
            {details}
            <Show when=move || open.get()>
                {
                    let path = path_inside.clone();
                    let id = id_inside.clone();
                    field_inside.with_value(|f| segs_inside.with_value(|s| control(f, s, &path, &format!("{id}-body"), state)))
                }
            </Show>
        </div>
    }
    .into_any()
}

fn control(field: &Field, segs: &[Seg], path: &str, id: &str, state: FormState) -> AnyView {
    let segs_read = segs.to_vec();
    let segs_write = segs.to_vec();
    let id = id.to_string();
    match &field.widget {
        Widget::Text | Widget::DateTime | Widget::Bytes => {
            let placeholder = match field.widget {
                Widget::DateTime => "2030-01-01T00:00:00Z",
                Widget::Bytes => "base64",
                _ => "",
            };
            view! {
                <input id=id type="text" placeholder=placeholder
                    prop:value=move || shown(read(state, &segs_read).as_ref())
                    on:input:target=move |ev| {
                        let t = ev.target().value();
                        write(state, &segs_write, (!t.is_empty()).then_some(Value::String(t)));
                    }
                />
            }
            .into_any()
        }
        Widget::Integer | Widget::Number => {
            let integer = matches!(field.widget, Widget::Integer);
            view! {
                <input id=id type="text" inputmode="numeric" class="short"
                    prop:value=move || shown(read(state, &segs_read).as_ref())
                    on:input:target=move |ev| write(state, &segs_write, typed_number(&ev.target().value(), integer))
                />
            }
            .into_any()
        }
        Widget::IntOrString => view! {
            <input id=id type="text" class="short" placeholder=field.placeholder.clone()
                prop:value=move || shown(read(state, &segs_read).as_ref())
                on:input:target=move |ev| {
                    let previous = read(state, &segs_write);
                    write(state, &segs_write, typed_int_or_string(&ev.target().value(), previous.as_ref()));
                }
            />
        }
        .into_any(),
        Widget::Boolean => view! {
            <input id=id type="checkbox"
                prop:checked=move || read(state, &segs_read).and_then(|v| v.as_bool()).unwrap_or(false)
                on:change:target=move |ev| write(state, &segs_write, Some(Value::Bool(ev.target().checked())))
            />
        }
        .into_any(),
        Widget::Select(options) => {
            let options = options.clone();
            view! {
                <select id=id
                    prop:value=move || read(state, &segs_read).map(|v| v.to_string()).unwrap_or_default()
                    on:change:target=move |ev| {
                        let raw = ev.target().value();
                        write(state, &segs_write, serde_json::from_str(&raw).ok());
                    }
                >
                    <option value="">"—"</option>
                    {options.into_iter().map(|o| {
                        let shown = match &o { Value::String(s) => s.clone(), other => other.to_string() };
                        view! { <option value=o.to_string()>{shown}</option> }
                    }).collect_view()}
                </select>
            }
            .into_any()
        }
        Widget::Object(fields) => object_control(field, fields, segs, path, state),
        Widget::List(item) => list_control(item, segs, path, state),
        Widget::Map(value) => map_control(value, segs, path, state),
        Widget::Choice(options) => choice_control(options, segs, path, id, state),
        Widget::Yaml(reason) => yaml_control(reason.clone(), segs, id, state),
    }
}

/// An object's properties; with `oneOf` alternatives, a radio group picks which
/// alternative's properties are shown and set. Values of the alternative left are
/// kept aside, so switching back restores what was typed.
fn object_control(
    field: &Field,
    fields: &[Field],
    segs: &[Seg],
    path: &str,
    state: FormState,
) -> AnyView {
    let segs_now = segs.to_vec();
    let current = state
        .value
        .with_untracked(|v| get(v, &segs_now).cloned())
        .unwrap_or(Value::Null);
    let chosen = RwSignal::new(field.chosen_alternative(&current));
    let stash = StoredValue::new(serde_json::Map::new());
    let owner = field.clone();
    let hidden = Memo::new(move |_| {
        if owner.exclusive {
            owner.hidden_by(chosen.get())
        } else {
            vec![]
        }
    });
    let chooser = (!field.alternatives.is_empty()).then(|| {
        let legend = if field.exclusive {
            "Set exactly one of these:"
        } else {
            "Set at least one of these:"
        };
        let group = format!("alt-{path}");
        let options = field
            .alternatives
            .iter()
            .enumerate()
            .map(|(i, alt)| {
                let required = alt.required.clone();
                let owner = field.clone();
                let segs = segs.to_vec();
                let group = group.clone();
                view! {
                    <label class="choice-option">
                        <input type="radio" name=group prop:checked=move || chosen.get() == Some(i)
                            on:change=move |_| {
                                let leaving = owner.hidden_by(Some(i));
                                state.value.update(|v| {
                                    for prop in &required {
                                        let mut s = segs.clone();
                                        s.push(Seg::Key(prop.clone()));
                                        if let Some(kept) = stash.with_value(|m| m.get(prop).cloned()) {
                                            set(v, &s, Some(kept));
                                        }
                                    }
                                    if owner.exclusive {
                                        for prop in leaving {
                                            let mut s = segs.clone();
                                            s.push(Seg::Key(prop.clone()));
                                            if let Some(old) = get(v, &s).cloned() {
                                                stash.update_value(|m| { m.insert(prop, old); });
                                                set(v, &s, None);
                                            }
                                        }
                                    }
                                });
                                chosen.set(Some(i));
                            }/>
                        {alt.label.clone()}
                    </label>
                }
            })
            .collect_view();
        view! { <fieldset class="choice"><legend>{legend}</legend>{options}</fieldset> }
    });
    // Required fields and fields with values first; the rest in the schema's order.
    let mut ordered: Vec<&Field> = fields.iter().collect();
    state.value.with_untracked(|v| {
        ordered.sort_by_key(|f| {
            let mut s = segs.to_vec();
            s.push(Seg::Key(f.name.clone()));
            (!f.required, !has_value(v, &s))
        })
    });
    let children = ordered
        .into_iter()
        .map(|f| {
            let mut s = segs.to_vec();
            s.push(Seg::Key(f.name.clone()));
            let child = f.clone();
            let name = f.name.clone();
            let child_path = child_path(path, &f.name);
            view! {
                <Show when=move || hidden.with(|h| !h.contains(&name))>
                    <FieldView field=child.clone() segs=s.clone() path=child_path.clone() state/>
                </Show>
            }
        })
        .collect_view();
    view! { {chooser}<div class="section">{children}</div> }.into_any()
}

/// A value allowed several shapes (`oneOf`/`anyOf` without a type): pick the shape,
/// then edit it with that shape's widget. The value of a shape left is kept aside.
fn choice_control(
    options: &[Field],
    segs: &[Seg],
    path: &str,
    id: String,
    state: FormState,
) -> AnyView {
    let segs_now = segs.to_vec();
    let current = state.value.with_untracked(|v| get(v, &segs_now).cloned());
    let first_fit = current
        .as_ref()
        .and_then(|v| options.iter().position(|o| shape_fits(&o.widget, v)))
        .unwrap_or(0);
    let selected = RwSignal::new(first_fit);
    let stash = StoredValue::new(std::collections::HashMap::<usize, Value>::new());
    let labels: Vec<String> = options.iter().map(|o| o.name.clone()).collect();
    let options = options.to_vec();
    let segs_switch = segs.to_vec();
    let segs_view = segs.to_vec();
    let path = path.to_string();
    view! {
        <select id=id class="choice-select"
            prop:value=move || selected.get().to_string()
            on:change:target=move |ev| {
                let Ok(next) = ev.target().value().parse::<usize>() else { return };
                let previous = selected.get_untracked();
                if next == previous { return; }
                if let Some(old) = read(state, &segs_switch) {
                    stash.update_value(|m| { m.insert(previous, old); });
                }
                write(state, &segs_switch, stash.with_value(|m| m.get(&next).cloned()));
                selected.set(next);
            }
        >
            {labels.into_iter().enumerate().map(|(i, l)| view! { <option value=i.to_string()>{l}</option> }).collect_view()}
        </select>
        {move || {
            let mut chosen = options.get(selected.get()).cloned()?;
            chosen.name = String::new();
            Some(view! { <FieldView field=chosen segs=segs_view.clone() path=path.clone() state/> })
        }}
    }
    .into_any()
}

fn list_control(item: &Field, segs: &[Seg], path: &str, state: FormState) -> AnyView {
    let segs_len = segs.to_vec();
    let len = Memo::new(move |_| {
        read(state, &segs_len)
            .and_then(|v| v.as_array().map(Vec::len))
            .unwrap_or(0)
    });
    let item = item.clone();
    let segs = segs.to_vec();
    let path = path.to_string();
    let add_segs = segs.clone();
    let empty = empty_value(&item);
    let keys = item.list_keys.clone();
    view! {
        <div class="list">
            {move || {
                (0..len.get()).map(|i| {
                    let mut s = segs.clone();
                    s.push(Seg::Index(i));
                    let remove = s.clone();
                    let up = segs.clone();
                    let key_segs = s.clone();
                    let keys = keys.clone();
                    let row_key = (!keys.is_empty()).then(|| view! {
                        <span class="row-key mono">{move || state.value.with(|v| keys.iter().map(|k| {
                            let mut s = key_segs.clone();
                            s.push(Seg::Key(k.clone()));
                            format!("{k}: {}", shown(get(v, &s)))
                        }).collect::<Vec<_>>().join(" · "))}</span>
                    });
                    view! {
                        <div class="list-row">
                            {row_key}
                            <FieldView field=item.clone() segs=s path=format!("{path}[{i}]") state/>
                            <div class="row-actions">
                                <button type="button" class="small-btn" title="Move up" disabled=i == 0
                                    on:click=move |_| state.value.update(|v| {
                                        if let Some(Value::Array(items)) = get_mut(v, &up) && i > 0 { items.swap(i - 1, i); }
                                    })>"↑"</button>
                                <button type="button" class="small-btn" title="Remove"
                                    on:click=move |_| write(state, &remove, None)>"✕"</button>
                            </div>
                        </div>
                    }
                }).collect_view()
            }}
            <button type="button" class="small-btn add"
                on:click=move |_| {
                    let mut s = add_segs.clone();
                    s.push(Seg::Index(len.get_untracked()));
                    write(state, &s, Some(empty.clone()));
                }>"+ Add item"</button>
        </div>
    }
    .into_any()
}

fn get_mut<'a>(root: &'a mut Value, segs: &[Seg]) -> Option<&'a mut Value> {
    segs.iter().try_fold(root, |v, seg| match seg {
        Seg::Key(k) => v.get_mut(k.as_str()),
        Seg::Index(i) => v.get_mut(*i),
    })
}

fn map_control(value_field: &Field, segs: &[Seg], path: &str, state: FormState) -> AnyView {
    let segs_keys = segs.to_vec();
    let keys = Memo::new(move |_| {
        read(state, &segs_keys)
            .and_then(|v| v.as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()))
            .unwrap_or_default()
    });
    let value_field = value_field.clone();
    let segs = segs.to_vec();
    let path = path.to_string();
    let new_key = RwSignal::new(String::new());
    let add_segs = segs.clone();
    let empty = empty_value(&value_field);
    view! {
        <div class="map">
            <For each=move || keys.get() key=|k| k.clone() let:key>
                {
                    let mut s = segs.clone();
                    s.push(Seg::Key(key.clone()));
                    let remove = s.clone();
                    view! {
                        <div class="map-row">
                            <span class="map-key mono">{key.clone()}</span>
                            <FieldView field=value_field.clone() segs=s path=format!("{path}[{key}]") state/>
                            <button type="button" class="small-btn" title="Remove"
                                on:click=move |_| write(state, &remove, None)>"✕"</button>
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
                            let mut s = add_segs.clone();
                            s.push(Seg::Key(k));
                            write(state, &s, Some(empty.clone()));
                            new_key.set(String::new());
                        }
                    }>"+ Add entry"</button>
            </div>
        </div>
    }
    .into_any()
}

fn yaml_control(reason: String, segs: &[Seg], id: String, state: FormState) -> AnyView {
    let segs_read = segs.to_vec();
    let segs_write = segs.to_vec();
    let problem = RwSignal::new(None::<String>);
    view! {
        <p class="field-help">{reason}</p>
        <textarea id=id class="yaml-input" rows="6" spellcheck="false"
            prop:value=move || match read(state, &segs_read) {
                None | Some(Value::Null) => String::new(),
                Some(v) => serde_yaml::to_string(&v).unwrap_or_default(),
            }
            on:change:target=move |ev| {
                let text = ev.target().value();
                if text.trim().is_empty() {
                    problem.set(None);
                    write(state, &segs_write, None);
                    return;
                }
                match serde_yaml::from_str::<Value>(&text) {
                    Ok(v) => {
                        problem.set(None);
                        write(state, &segs_write, Some(v));
                    }
                    Err(e) => problem.set(Some(format!("Not valid YAML: {e}"))),
                }
            }
        ></textarea>
        {move || problem.get().map(|p| view! { <p class="field-error" role="alert">{p}</p> })}
    }
    .into_any()
}

/// A field of the form, for the search: where it is and what it says.
#[derive(Clone, PartialEq)]
struct Entry {
    path: String,
    name: String,
    summary: String,
    haystack: String,
}

fn entries(field: &Field, out: &mut Vec<Entry>) {
    if !field.name.is_empty() {
        let summary = field.help.lines().next().unwrap_or_default();
        out.push(Entry {
            path: field.path.clone(),
            name: field.name.clone(),
            summary: summary.chars().take(120).collect(),
            haystack: format!("{} {}", field.name, field.help).to_lowercase(),
        });
    }
    match &field.widget {
        Widget::Object(children) => children.iter().for_each(|c| entries(c, out)),
        Widget::List(item) | Widget::Map(item) => entries(item, out),
        _ => {}
    }
}

/// Results shown at most; a narrower query finds the rest.
const SEARCH_RESULTS: usize = 12;

/// Finds fields by name or description and jumps to one (opening the sections on the
/// way).
#[component]
pub fn FieldSearch(form: Field, state: FormState) -> impl IntoView {
    let mut all = Vec::new();
    entries(&form, &mut all);
    let count = all.len();
    let all = StoredValue::new(all);
    let query = RwSignal::new(String::new());
    let results = Memo::new(move |_| {
        let q = query.get().trim().to_lowercase();
        if q.is_empty() {
            return (vec![], 0);
        }
        all.with_value(|all| {
            // Name matches before description matches.
            let mut hits: Vec<&Entry> = all.iter().filter(|e| e.haystack.contains(&q)).collect();
            hits.sort_by_key(|e| !e.name.to_lowercase().contains(&q));
            let total = hits.len();
            (
                hits.into_iter()
                    .take(SEARCH_RESULTS)
                    .cloned()
                    .collect::<Vec<_>>(),
                total,
            )
        })
    });
    view! {
        <div class="field-search">
            <input type="search" data-testid="field-search" aria-label="Find a field"
                placeholder=format!("Find one of {count} fields by name or description")
                bind:value=query/>
            {move || {
                let (hits, total) = results.get();
                (!query.with(|q| q.trim().is_empty())).then(|| view! {
                    <ul class="search-results">
                        {hits.into_iter().map(|e| {
                            let path = e.path.clone();
                            view! {
                                <li><button type="button" class="link-btn"
                                    on:click=move |_| state.bring_into_view(path.clone())>
                                    <span class="mono">{e.path.clone()}</span>
                                    <span class="subtle">{e.summary.clone()}</span>
                                </button></li>
                            }
                        }).collect_view()}
                        {(total == 0).then(|| view! { <li class="subtle">"No field matches."</li> })}
                        {(total > SEARCH_RESULTS).then(|| view! {
                            <li class="subtle">{format!("{} more; type more to narrow.", total - SEARCH_RESULTS)}</li>
                        })}
                    </ul>
                })
            }}
        </div>
    }
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
}
