//! The Provision form's own fields, below the plan and version: how many instances,
//! how it is reached, its volume and what deleting it does to its data, each said in
//! words, and only those that apply to the choice (a Tomcat has no volume). The rest
//! of a Stack (its own resources) is in the generic form, one click away.

use leptos::prelude::*;
use serde_json::Value;

use crate::components::form::{Messages, use_form};
use portico_core::payload::StackOffer;
use portico_core::schema::field_path::FieldPath;

/// The fields this form shows: a link that fills any other in is named on the page.
pub const SHOWN_TO_PEOPLE: &[&str] = &[
    "metadata.name",
    "spec.choice",
    "spec.plan",
    "spec.version",
    "spec.replicas",
    "spec.exposure",
    "spec.storage",
    "spec.deletionPolicy",
    "spec.reattachKeptData",
];

/// What the volume size must look like, in words (the schema says it as a pattern).
const SIZE_IN_WORDS: &str = "Write a whole number, then Mi, Gi or Ti: 20Gi, for example.";

#[component]
pub fn StackFields(offer: StackOffer, plan_storage: Signal<Option<String>>) -> impl IntoView {
    let form = use_form();
    let path = |name: &str| FieldPath::top("spec").property(name);
    let text_at = move |name: &'static str| {
        let at = path(name);
        Signal::derive(move || form.read(&at).and_then(|v| v.as_str().map(str::to_string)))
    };
    let set = move |name: &'static str, new: Option<Value>| {
        form.write(&path(name), new);
        form.touch(path(name).text());
    };
    let replicas_at = path("replicas");
    let replicas = move || {
        form.read(&replicas_at)
            .map(|v| v.to_string())
            .unwrap_or_else(|| "1".into())
    };
    let reattach_at = path("reattachKeptData");
    let reattach_read = reattach_at.clone();
    let reattaching =
        Signal::derive(move || form.read(&reattach_at).and_then(|v| v.as_bool()) == Some(true));
    // Shown once asked for (the Reattach link), unticked or not: unticking keeps it.
    let reattach_asked = Signal::derive(move || form.read(&reattach_read).is_some());
    let name_at = FieldPath::top("metadata").property("name");
    let stack_name = Signal::derive(move || {
        form.read(&name_at)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    });
    let stateful = offer.stateful;
    let storage = text_at("storage");
    view! {
        <section class="panel people-fields" data-testid="stack-fields">
            <div class="field" data-path="spec.replicas">
                <label class="field-label" for="f-spec-replicas">"Instances"</label>
                <input id="f-spec-replicas" type="number" min="1" max="10" class="short"
                    prop:value=replicas
                    on:input:target=move |ev| {
                        let typed = ev.target().value();
                        let number = typed.trim().parse::<i64>().ok().map(Value::from);
                        set("replicas", number.or(Some(Value::String(typed))));
                    }/>
                <p class="field-help">
                    {if stateful { "From 1 to 10, each with its own volume. " } else { "From 1 to 10. " }}
                    "With one, a change of plan or version restarts it and it cannot be reached meanwhile."
                </p>
                <Messages path="spec.replicas".to_string()/>
            </div>
            <Choice field="exposure" legend="Reached" options=&[
                ("ClusterIP", "From inside the cluster only", "a ClusterIP Service: apps in the cluster connect by its name", "exposure-cluster"),
                ("NodePort", "Also from outside the cluster", "a NodePort: a port on every node's address", "exposure-node-port"),
            ]/>
            {stateful.then(|| view! {
                <div class="field" data-path="spec.storage">
                    <label class="field-label" for="f-spec-storage">"Volume size"</label>
                    <input id="f-spec-storage" type="text" class="short"
                        placeholder=move || plan_storage.get().unwrap_or_default()
                        prop:value=move || storage.get().unwrap_or_default()
                        on:input:target=move |ev| {
                            let typed = ev.target().value();
                            set("storage", (!typed.trim().is_empty()).then(|| Value::String(typed.trim().to_string())));
                        }/>
                    <p class="field-help">
                        {move || match plan_storage.get() {
                            Some(size) => format!("Of each instance. Empty: the plan's {size}. "),
                            None => "Of each instance. ".to_string(),
                        }}
                        {SIZE_IN_WORDS}
                    </p>
                    <SizeMessages/>
                </div>
                <Choice field="deletionPolicy" legend="When the Stack is deleted" options=&[
                    ("Retain", "Keep the data", "its volumes and the password that opens them: a new Stack of the same name can take them over", "deletion-retain"),
                    ("Delete", "Delete the data with it", "", "deletion-delete"),
                ]/>
            })}
            {move || reattach_asked.get().then(|| view! {
                <div class="field" data-path="spec.reattachKeptData">
                    <label class="option">
                        <input id="f-spec-reattachKeptData" type="checkbox" prop:checked=reattaching
                            on:change:target=move |ev| set("reattachKeptData", Some(Value::Bool(ev.target().checked())))/>
                        <span>{move || format!("Take over the data a deleted Stack named {} kept", stack_name.get())}</span>
                    </label>
                    <p class="field-help">"Needs permission to delete volume claims in the namespace: the data is then this Stack's."</p>
                    <Messages path="spec.reattachKeptData".to_string()/>
                </div>
            })}
        </section>
    }
}

/// One way a choice can go: its value, what it means, more about it (may be empty),
/// and its test id.
type ChoiceOption = (&'static str, &'static str, &'static str, &'static str);

/// A choice of `spec.FIELD` between `options` as radio buttons, each a sentence; the
/// first is chosen while the field holds none of them (the schema's default).
#[component]
fn Choice(
    field: &'static str,
    legend: &'static str,
    options: &'static [ChoiceOption],
) -> impl IntoView {
    let form = use_form();
    let path = FieldPath::top("spec").property(field);
    let at = path.clone();
    let chosen = Signal::derive(move || {
        let value = form.read(&at).and_then(|v| v.as_str().map(str::to_string));
        value
            .filter(|v| options.iter().any(|(o, ..)| o == v))
            .or_else(|| options.first().map(|(o, ..)| o.to_string()))
    });
    view! {
        <fieldset class="field options" data-path=path.text().to_string()>
            <legend class="field-label">{legend}</legend>
            {options.iter().map(|&(value, meaning, more, testid)| {
                let path = path.clone();
                view! {
                    <label class="option">
                        <input type="radio" name=field value=value data-testid=testid
                            prop:checked=move || chosen.get().as_deref() == Some(value)
                            on:change=move |_| {
                                form.write(&path, Some(Value::String(value.into())));
                                form.touch(path.text());
                            }/>
                        <span>{meaning}{(!more.is_empty()).then(|| view! { <span class="subtle small">{format!(" ({more})")}</span> })}</span>
                    </label>
                }
            }).collect_view()}
            <Messages path=path.text().to_string()/>
        </fieldset>
    }
}

/// The volume size's messages: the browser's check in words rather than its pattern,
/// the API server's as it says them.
#[component]
fn SizeMessages() -> impl IntoView {
    let form = use_form();
    form.place("spec.storage");
    let messages = move || {
        let mut shown: Vec<String> = form
            .shown_errors("spec.storage")
            .into_iter()
            .map(|m| {
                if m.starts_with("Must match the pattern") {
                    SIZE_IN_WORDS.to_string()
                } else {
                    m
                }
            })
            .collect();
        shown.dedup();
        shown
    };
    view! {
        <For each=messages key=|m| m.clone() let:message>
            <p class="field-error" role="alert">{message}</p>
        </For>
    }
}
