//! Form fields generated from the schema's form model, bound to one JSON object.
//! Invalid input is kept as typed (a number field holding "12a" stays "12a") so the
//! validation message can say what to change and nothing the user typed is lost.

use leptos::prelude::*;
use serde_json::Value;

use crate::schema::form::{Field, Widget, shape_fits};
use crate::schema::validate::{FieldError, child_path};
use crate::schema::value::{Seg, get, set};

/// Everything a field needs besides its own description.
#[derive(Clone, Copy)]
pub struct FormState {
    pub value: RwSignal<Value>,
    pub errors: Signal<Vec<FieldError>>,
}

fn read(state: FormState, segs: &[Seg]) -> Option<Value> {
    state.value.with(|v| get(v, segs).cloned())
}

fn write(state: FormState, segs: &[Seg], new: Option<Value>) {
    state.value.update(|v| set(v, segs, new));
}

fn empty_value(widget: &Widget) -> Value {
    match widget {
        Widget::Object(_) | Widget::Map(_) => Value::Object(Default::default()),
        Widget::List(_) => Value::Array(vec![]),
        Widget::Integer | Widget::Number => Value::from(0),
        Widget::Boolean => Value::Bool(false),
        _ => Value::String(String::new()),
    }
}

fn as_text(v: Option<Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
    }
}

/// Parses what was typed into a number field; keeps unparsable text as a string.
fn typed_number(text: &str, integer: bool) -> Option<Value> {
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let parsed = if integer {
        t.parse::<i64>().ok().map(Value::from)
    } else {
        t.parse::<f64>()
            .ok()
            .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
    };
    Some(parsed.unwrap_or_else(|| Value::String(t.to_string())))
}

#[component]
fn Messages(path: String, state: FormState) -> impl IntoView {
    let mine = move || {
        state
            .errors
            .get()
            .into_iter()
            .filter(|e| e.path == path)
            .map(|e| e.message)
            .collect::<Vec<_>>()
    };
    view! {
        <For each=mine key=|m| m.clone() let:message>
            <p class="field-error" role="alert">{message}</p>
        </For>
    }
}

/// One field: label, widget, help, constraints, rules and its messages.
#[component]
pub fn FieldView(field: Field, segs: Vec<Seg>, path: String, state: FormState) -> AnyView {
    let label = if field.name.is_empty() {
        String::new()
    } else {
        field.name.clone()
    };
    let input_id = format!("f-{}", path.replace(['.', '[', ']'], "-"));
    let help = field.help.clone();
    let constraints = field.constraints.join(" · ");
    let rules = field.rules.clone();
    let default_note = field.default.as_ref().map(|d| format!("default {d}"));
    let required = field.required;
    let control = control(&field, &segs, &path, &input_id, state);
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
    view! {
        <div class="field" class:nested=nested data-path=path.clone()>
            {(!label.is_empty()).then(|| view! {
                <label class="field-label" for=input_id.clone()>
                    {label.clone()}
                    {required.then(|| view! { <span class="req" title="required">" *"</span> })}
                </label>
            })}
            {null_toggle}
            {control}
            <Messages path=path.clone() state/>
            {(!help.is_empty()).then(|| view! { <p class="field-help">{help}</p> })}
            {(!constraints.is_empty() || default_note.is_some()).then(|| view! {
                <p class="field-constraints">
                    {constraints.clone()}
                    {default_note.map(|d| view! { <span class="default-note">{d}</span> })}
                </p>
            })}
            {(!rules.is_empty()).then(|| view! {
                <ul class="field-rules">
                    {rules.into_iter().map(|r| {
                        let shown = if r.message.is_empty() { r.rule.clone() } else { r.message };
                        view! { <li title=r.rule>{shown}</li> }
                    }).collect_view()}
                </ul>
            })}
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
                    prop:value=move || as_text(read(state, &segs_read))
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
                    prop:value=move || as_text(read(state, &segs_read))
                    on:input:target=move |ev| write(state, &segs_write, typed_number(&ev.target().value(), integer))
                />
            }
            .into_any()
        }
        Widget::IntOrString => view! {
            <input id=id type="text" class="short"
                prop:value=move || as_text(read(state, &segs_read))
                on:input:target=move |ev| {
                    let t = ev.target().value();
                    let v = match t.trim().parse::<i64>() {
                        Ok(n) => Some(Value::from(n)),
                        Err(_) => (!t.is_empty()).then_some(Value::String(t)),
                    };
                    write(state, &segs_write, v);
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
                let owner = field.clone();
                let segs = segs.to_vec();
                let group = group.clone();
                view! {
                    <label class="choice-option">
                        <input type="radio" name=group prop:checked=move || chosen.get() == Some(i)
                            on:change=move |_| {
                                let leaving = owner.hidden_by(Some(i));
                                state.value.update(|v| {
                                    for prop in &owner.alternatives[i].required {
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
    let children = fields
        .iter()
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
    let empty = empty_value(&item.widget);
    view! {
        <div class="list">
            {move || {
                (0..len.get()).map(|i| {
                    let mut s = segs.clone();
                    s.push(Seg::Index(i));
                    let remove = s.clone();
                    let up = segs.clone();
                    view! {
                        <div class="list-row">
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
    let empty = empty_value(&value_field.widget);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_numbers_keep_what_cannot_be_parsed() {
        assert_eq!(typed_number("", true), None);
        assert_eq!(typed_number(" 12 ", true), Some(Value::from(12)));
        assert_eq!(typed_number("12a", true), Some(Value::String("12a".into())));
        assert_eq!(typed_number("1.5", true), Some(Value::String("1.5".into())));
        assert_eq!(typed_number("1.5", false), Some(serde_json::json!(1.5)));
    }
}
