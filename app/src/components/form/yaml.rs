//! A value the form cannot draw (too deep, no schema, no single shape), edited as YAML.

use leptos::prelude::*;
use serde_json::Value;

use portico_core::schema::field_path::FieldPath;

use super::model::use_form;

#[component]
pub fn YamlControl(reason: String, path: FieldPath, id: String) -> AnyView {
    let form = use_form();
    let path_read = path.clone();
    let problem = RwSignal::new(None::<String>);
    view! {
        <p class="field-help">{reason}</p>
        <textarea id=id class="yaml-input" rows="6" spellcheck="false"
            prop:value=move || match form.read(&path_read) {
                None | Some(Value::Null) => String::new(),
                Some(v) => serde_yaml::to_string(&v).unwrap_or_default(),
            }
            on:change:target=move |ev| {
                let text = ev.target().value();
                if text.trim().is_empty() {
                    problem.set(None);
                    form.write(&path, None);
                    return;
                }
                match serde_yaml::from_str::<Value>(&text) {
                    Ok(v) => {
                        problem.set(None);
                        form.write(&path, Some(v));
                    }
                    Err(e) => problem.set(Some(format!("Not valid YAML: {e}"))),
                }
            }
        ></textarea>
        {move || problem.get().map(|p| view! { <p class="field-error" role="alert">{p}</p> })}
    }
    .into_any()
}
