//! Sections made of alternatives: an object's properties (with a `oneOf` chooser),
//! and a value allowed several shapes.

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::{Field, Widget, shape_fits};
use portico_core::schema::value::{get, set};

use super::model::{DrawField, has_value, use_form};

/// An object's properties; with `oneOf` alternatives, a radio group picks which
/// alternative's properties are shown and set. Values of the alternative left are
/// kept aside, so switching back restores what was typed.
#[component]
pub fn ObjectControl(field: Field, path: FieldPath, child: DrawField) -> AnyView {
    let form = use_form();
    let Widget::Object(fields) = &field.widget else {
        return ().into_any();
    };
    let current = form
        .value
        .with_untracked(|v| get(v, path.segs()).cloned())
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
        let group = format!("alt-{}", path.text());
        let options = field
            .alternatives
            .iter()
            .enumerate()
            .map(|(i, alt)| {
                let required = alt.required.clone();
                let owner = field.clone();
                let path = path.clone();
                let group = group.clone();
                view! {
                    <label class="choice-option">
                        <input type="radio" name=group prop:checked=move || chosen.get() == Some(i)
                            on:change=move |_| {
                                let leaving = owner.hidden_by(Some(i));
                                form.value.update(|v| {
                                    for prop in &required {
                                        if let Some(kept) = stash.with_value(|m| m.get(prop).cloned()) {
                                            set(v, path.property(prop).segs(), Some(kept));
                                        }
                                    }
                                    if owner.exclusive {
                                        for prop in leaving {
                                            let at = path.property(&prop);
                                            if let Some(old) = get(v, at.segs()).cloned() {
                                                stash.update_value(|m| { m.insert(prop, old); });
                                                set(v, at.segs(), None);
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
    form.value.with_untracked(|v| {
        ordered.sort_by_key(|f| (!f.required, !has_value(v, &path.property(&f.name))))
    });
    let children = ordered
        .into_iter()
        .map(|f| {
            let inner = f.clone();
            let name = f.name.clone();
            let inner_path = path.property(&f.name);
            view! {
                <Show when=move || hidden.with(|h| !h.contains(&name))>
                    {child(inner.clone(), inner_path.clone())}
                </Show>
            }
        })
        .collect_view();
    view! { {chooser}<div class="section">{children}</div> }.into_any()
}

/// A value allowed several shapes (`oneOf`/`anyOf` without a type): pick the shape,
/// then edit it with that shape's widget. The value of a shape left is kept aside.
#[component]
pub fn ChoiceControl(
    options: Vec<Field>,
    path: FieldPath,
    id: String,
    child: DrawField,
) -> AnyView {
    let form = use_form();
    let current = form.value.with_untracked(|v| get(v, path.segs()).cloned());
    let first_fit = current
        .as_ref()
        .and_then(|v| options.iter().position(|o| shape_fits(&o.widget, v)))
        .unwrap_or(0);
    let selected = RwSignal::new(first_fit);
    let stash = StoredValue::new(std::collections::HashMap::<usize, Value>::new());
    let labels: Vec<String> = options.iter().map(|o| o.name.clone()).collect();
    let path_switch = path.clone();
    view! {
        <select id=id class="choice-select"
            prop:value=move || selected.get().to_string()
            on:change:target=move |ev| {
                let Ok(next) = ev.target().value().parse::<usize>() else { return };
                let previous = selected.get_untracked();
                if next == previous { return; }
                if let Some(old) = form.read(&path_switch) {
                    stash.update_value(|m| { m.insert(previous, old); });
                }
                form.write(&path_switch, stash.with_value(|m| m.get(&next).cloned()));
                selected.set(next);
            }
        >
            {labels.into_iter().enumerate().map(|(i, l)| view! { <option value=i.to_string()>{l}</option> }).collect_view()}
        </select>
        {move || {
            let mut chosen = options.get(selected.get()).cloned()?;
            chosen.name = String::new();
            Some(child(chosen, path.clone()))
        }}
    }
    .into_any()
}
