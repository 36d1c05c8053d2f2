//! A value the form cannot draw (too deep, no schema, no single shape), edited as YAML.

use leptos::prelude::*;
use portico_core::schema::field_path::FieldPath;

use super::model::use_form;
use crate::yaml;

#[component]
pub fn YamlControl(reason: String, path: FieldPath, id: String) -> AnyView {
    let form = use_form();
    let path_read = path.clone();
    let problem = RwSignal::new(None::<String>);
    // An empty field needs no YAML: a form whose free-form fields are left empty never
    // downloads it.
    let shown = yaml::yaml_of(Signal::derive(move || {
        form.read(&path_read).filter(|v| !v.is_null())
    }));
    let read = yaml::YamlReader::new(
        form.yaml_reading,
        Callback::new(move |read| match read {
            Ok(value) => {
                problem.set(None);
                form.write(&path, value);
            }
            Err(why) => problem.set(Some(format!("Not valid YAML: {why}"))),
        }),
    );
    view! {
        <p class="field-help">{reason}</p>
        <textarea id=id class="yaml-input" rows="6" spellcheck="false"
            prop:value=move || shown.get()
            on:focus=|_| yaml::warm_reader()
            on:change:target=move |ev| read.read(ev.target().value())
        ></textarea>
        {move || problem.get().map(|p| view! { <p class="field-error" role="alert">{p}</p> })}
    }
    .into_any()
}
