//! Create an object of any CRD from a form generated from its schema: checked as you
//! type in the browser, dry-run on the API server (debounced) as you go, dry-run again
//! before the real write; the server's causes land on the fields they name.

use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos_meta::Title;
use leptos_router::hooks::{query_signal, use_navigate, use_params_map, use_query_map};
use serde_json::Value;

use crate::api::{
    fetch_form_spec, fetch_object_json, list_namespaces, replace_object, submit_object,
};
use crate::components::error_banner::ErrorBanner;
use crate::components::form::{FieldSearch, FieldView, FormModel};
use crate::pages::stack::picker::StackPicker;
use portico_core::encode::percent_encode;
use portico_core::payload::{FormSpec, SubmitOutcome};
use portico_core::resource::{ResourceRef, is_path_segment};
use portico_core::schema::draft::Draft;
use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::{initial_value, spec_form};
use portico_core::schema::openapi::Schema;
use portico_core::schema::validate::{FieldError, validate};
use portico_core::schema::value::Seg;

#[component]
pub fn CreatePage() -> impl IntoView {
    let params = use_params_map();
    let resource = Memo::new(move |_| params.with(super::resource_from_params));
    let spec = Resource::new(move || resource.get(), fetch_form_spec);
    // What was typed survives a switch to another version of the same kind.
    let carried = StoredValue::new(None::<Draft>);
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading the schema…"</p> }>
            {move || spec.get().map(|result| match result {
                Ok(fs) => view! {
                    <ObjectForm resource=resource.get_untracked() spec=fs existing=None carry=carried/>
                }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}

/// Edit an existing object with the same generated form. The object's
/// resourceVersion goes with every save; a conflict keeps the user's edits.
#[component]
pub fn EditPage() -> impl IntoView {
    let params = use_params_map();
    let target = Memo::new(move |_| {
        params.with(|p| {
            (
                super::resource_from_params(p),
                p.get("namespace").filter(|ns| ns != "_"),
                p.get("name").unwrap_or_default(),
            )
        })
    });
    let loaded = Resource::new(
        move || target.get(),
        |(resource, namespace, name)| async move {
            let spec = fetch_form_spec(resource.clone()).await?;
            let object = fetch_object_json(resource, namespace, name).await?;
            Ok::<_, crate::error::BackendError>((spec, object))
        },
    );
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
            {move || loaded.get().map(|result| match result {
                Ok((spec, object)) => view! {
                    <ObjectForm resource=target.get_untracked().0 spec existing=Some(object)/>
                }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}

/// Messages for the name, which the schema does not cover.
fn name_errors(name: &str) -> Vec<FieldError> {
    let message = if name.is_empty() {
        "Required."
    } else if !is_path_segment(name) {
        "Use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit."
    } else {
        return vec![];
    };
    vec![FieldError {
        path: "metadata.name".into(),
        message: message.into(),
    }]
}

/// Where the API server's refusal is shown: causes naming a field go to that field;
/// the rest to the form's banner.
fn split_causes(outcome: &SubmitOutcome) -> (Vec<FieldError>, Option<String>) {
    match outcome {
        SubmitOutcome::Accepted { .. } => (vec![], None),
        SubmitOutcome::Rejected(r) => {
            let fields: Vec<FieldError> = r
                .causes
                .iter()
                .filter(|c| !c.field.is_empty())
                .map(|c| FieldError {
                    path: c.field.clone(),
                    message: c.message.clone(),
                })
                .collect();
            let general = if fields.is_empty() {
                Some(r.message.clone())
            } else {
                None
            };
            (fields, general)
        }
    }
}

/// A select of the kind's served versions (storage first) for a new object; picking
/// one reloads the form from that version's schema, keeping what was typed.
fn version_picker(resource: &ResourceRef, versions: Vec<String>, editing: bool) -> Option<AnyView> {
    if editing || versions.len() < 2 {
        return None;
    }
    let current = resource.version.clone();
    let resource = resource.clone();
    let navigate = use_navigate();
    let (ns_param, _) = query_signal::<String>("ns");
    Some(
        view! {
            <label class="version-picker">"Version "
                <select data-testid="version-picker" on:change:target=move |ev| {
                    let mut next = resource.clone();
                    next.version = ev.target().value();
                    let query = ns_param.get_untracked().map(|ns| format!("?ns={}", percent_encode(&ns))).unwrap_or_default();
                    navigate(&format!("{}/new{query}", next.page_path()), Default::default());
                }>
                    {versions.into_iter().enumerate().map(|(i, v)| {
                        let label = if i == 0 { format!("{v} (storage)") } else { v.clone() };
                        view! { <option value=v.clone() selected=v == current>{label}</option> }
                    }).collect_view()}
                </select>
            </label>
        }
        .into_any(),
    )
}

#[component]
fn ObjectForm(
    resource: ResourceRef,
    spec: FormSpec,
    existing: Option<Value>,
    /// What was typed under another version, carried into this one.
    #[prop(optional)]
    carry: Option<StoredValue<Option<Draft>>>,
) -> impl IntoView {
    let schema = Schema::from_value(&spec.schema);
    let form = spec_form(&schema);
    let namespaced = spec.namespaced;
    let (ns_param, _) = query_signal::<String>("ns");
    // Fields a link filled in (`?spec.choice=mysql`), named in a banner: a link from
    // anywhere can pre-fill a form, and the person must see what it chose for them.
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
                initial_value(&form),
            );
            // Links may fill fields in: `?spec.choice=mysql` (the Provision page does).
            use_query_map().with_untracked(|q| {
                for (key, text) in q {
                    // `metadata.name` too: reattaching kept volumes needs the old name.
                    if key.starts_with("spec.") || key == "metadata.name" {
                        let segs: Vec<Seg> =
                            key.split('.').map(|k| Seg::Key(k.to_string())).collect();
                        portico_core::schema::value::set(
                            &mut draft.object,
                            &segs,
                            Some(Value::String(text.to_string())),
                        );
                        prefilled.push((key.to_string(), text.to_string()));
                    }
                }
            });
            draft
        }
    };
    let editing = start.editing();
    let existing_name = editing.then(|| start.name().to_string());
    // The object is one value; name and namespace are read from it.
    let value = RwSignal::new(start.object);
    let original = RwSignal::new(start.original);
    let draft_now = move || Draft {
        object: value.get(),
        original: original.get(),
        namespaced,
    };
    let change = move |f: &mut dyn FnMut(&mut Draft)| {
        let mut draft = Draft {
            object: value.get_untracked(),
            original: original.get_untracked(),
            namespaced,
        };
        f(&mut draft);
        value.set(draft.object);
        original.set(draft.original);
    };
    // A Stack's plan and version are picked from the catalog beside the form.
    let is_stack = resource.group == "portico.dev" && resource.plural == "stacks";
    let set_field = Callback::new(move |(key, text): (String, String)| {
        let segs: Vec<Seg> = key.split('.').map(|k| Seg::Key(k.to_string())).collect();
        change(&mut |d| {
            portico_core::schema::value::set(
                &mut d.object,
                &segs,
                Some(Value::String(text.clone())),
            );
        });
    });
    let name = Memo::new(move |_| value.with(|v| Draft::name_of(v).to_string()));
    let namespace =
        Memo::new(move |_| value.with(|v| Draft::namespace_of(v, namespaced).map(str::to_string)));
    let latest_spec = RwSignal::new(None::<String>);
    if let Some(carry) = carry {
        Effect::new(move |_| carry.set_value(Some(draft_now())));
    }
    let namespaces = Resource::new(|| (), |_| list_namespaces());
    let show_yaml = RwSignal::new(false);
    let yaml_problem = RwSignal::new(None::<String>);

    let schema = StoredValue::new(schema);
    let client_errors = Memo::new(move |_| {
        let mut errors = name_errors(&name.get());
        errors.extend(value.with(|v| schema.with_value(|s| validate(s, v, ""))));
        errors
    });
    let server_errors = RwSignal::new(Vec::<FieldError>::new());
    let banner = RwSignal::new(None::<String>);
    let checking = RwSignal::new(false);
    let model = FormModel::new(value, client_errors.into(), server_errors.into());
    model.provide();
    let spec = StoredValue::new(spec);
    let resource_for_save = resource.clone();
    // The YAML view edits the same object as the form, so switching loses nothing.
    let apply_yaml = move |text: String| {
        let mut outcome = Ok(());
        change(&mut |d| outcome = d.apply_yaml(&text));
        yaml_problem.set(outcome.err().map(|e| e.to_string()));
    };
    // Sends the body: create or replace, dry-run or for real.
    let save = move |body: Value, dry_run: bool| {
        let resource = resource_for_save.clone();
        let ns = namespace.get_untracked();
        let name = name.get_untracked();
        async move {
            if editing {
                replace_object(resource, ns, name, body.to_string(), dry_run).await
            } else {
                submit_object(body.to_string(), dry_run).await
            }
        }
    };

    // Debounced dry-run while typing: only the latest edit's answer is kept.
    let generation = StoredValue::new(0u64);
    let save_for_submit = save.clone();
    Effect::new(move |first: Option<()>| {
        let body = value.get();
        if first.is_none() || !client_errors.with(Vec::is_empty) {
            server_errors.set(vec![]);
            return;
        }
        generation.update_value(|g| *g += 1);
        let mine = generation.get_value();
        let save_in_effect = save.clone();
        // The timer and the answer can outlive the page (a submit navigates away):
        // then `generation` is gone, and nothing more is read or shown.
        let still_latest = move || generation.try_get_value() == Some(mine);
        set_timeout(
            move || {
                if !still_latest() {
                    return;
                }
                checking.set(true);
                let check = save_in_effect(body, true);
                spawn_local(async move {
                    let outcome = check.await;
                    if still_latest() {
                        checking.set(false);
                        match outcome {
                            Ok(o) => {
                                let (fields, general) = split_causes(&o);
                                server_errors.set(fields);
                                banner.set(general);
                            }
                            Err(e) => banner.set(Some(e.to_string())),
                        }
                    }
                });
            },
            std::time::Duration::from_millis(400),
        );
    });

    let navigate = use_navigate();
    let submitting = RwSignal::new(false);
    let resource_for_submit = resource.clone();
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if !client_errors.with_untracked(Vec::is_empty) {
            banner.set(Some("Fix the fields marked below first.".into()));
            model.reveal_errors();
            return;
        }
        let body = value.get_untracked();
        let navigate = navigate.clone();
        let resource = resource_for_submit.clone();
        // Read now: after the awaits below the page may already be gone.
        let target_namespace = namespace.get_untracked();
        let target_name = name.get_untracked();
        let (check, write) = (
            save_for_submit(body.clone(), true),
            save_for_submit(body, false),
        );
        submitting.set(true);
        spawn_local(async move {
            // Nothing is written that fails a dry run.
            let verdict = async {
                match check.await? {
                    SubmitOutcome::Accepted { .. } => write.await,
                    rejected => Ok(rejected),
                }
            }
            .await;
            submitting.set(false);
            match verdict {
                Ok(SubmitOutcome::Accepted { name, namespace }) => {
                    navigate(
                        &resource.object_path(namespace.as_deref(), &name),
                        Default::default(),
                    );
                }
                Ok(SubmitOutcome::Rejected(r)) if r.code == 409 && editing => {
                    // Someone else saved first: keep every edit, put them on top of
                    // what the server has now, and base the next save on it.
                    let latest =
                        fetch_object_json(resource.clone(), target_namespace, target_name).await;
                    match latest {
                        Ok(obj) => {
                            latest_spec.set(Some(
                                serde_yaml::to_string(obj.get("spec").unwrap_or(&Value::Null))
                                    .unwrap_or_default(),
                            ));
                            let mut clashes = Vec::new();
                            change(&mut |d| clashes = d.rebase(obj.clone()));
                            let clash_note = if clashes.is_empty() {
                                String::new()
                            } else {
                                format!(
                                    " You and they both changed {}: yours is kept.",
                                    clashes.join(", ")
                                )
                            };
                            banner.set(Some(format!(
                                "Someone changed this object after you opened it. Your edits are kept, \
                                 on top of the server's current version (shown below).{clash_note} \
                                 Save again to apply them."
                            )));
                        }
                        Err(e) => banner.set(Some(e.to_string())),
                    }
                }
                Ok(rejected) => {
                    let (fields, general) = split_causes(&rejected);
                    server_errors.set(fields);
                    banner.set(Some(general.unwrap_or_else(|| {
                        "The API server refused it; see the fields marked below.".into()
                    })));
                }
                Err(e) => banner.set(Some(e.to_string())),
            }
        });
    };

    let kind = spec.with_value(|s| s.kind.clone());
    let pick_namespace = namespaced && !editing;
    let list_href = crate::base::url(&resource.page_path());
    let heading = match &existing_name {
        Some(n) => format!("Edit {kind} {n}"),
        None => format!("New {kind}"),
    };
    view! {
        <Title text=heading.clone()/>
        <p class="crumbs"><a href=list_href>{resource.plural.clone()}</a>{if editing { " / edit" } else { " / new" }}</p>
        <div class="page-head">
            <div>
                <h1>{heading}</h1>
                <p class="subtle mono">{spec.with_value(|s| s.api_version.clone())}</p>
            </div>
            {version_picker(&resource, spec.with_value(|s| s.versions.clone()), editing)}
            <span class="badge pending" class:hidden=move || !checking.get()>"Checking with the API server…"</span>
        </div>
        {(!prefilled.is_empty()).then(|| view! {
            <div class="callout warn-callout" role="note" data-testid="prefilled">
                "The link you followed filled in "
                {prefilled.iter().enumerate().map(|(i, (key, text))| view! {
                    {if i > 0 { ", " } else { "" }}
                    <code>{key.clone()}</code>" = "<code>{text.clone()}</code>
                }).collect_view()}
                {if prefilled.len() == 1 { ". Check it before you create the object." } else { ". Check them before you create the object." }}
            </div>
        })}
        {move || banner.get().map(|b| view! { <div class="error-banner" role="alert" data-testid="form-banner">{b}</div> })}
        <form class="object-form" on:submit=on_submit novalidate>
            <section class="panel">
                <h2>"Metadata"</h2>
                <div class="field" data-path="metadata.name">
                    <label class="field-label" for="f-metadata-name">"name"<span class="req">" *"</span></label>
                    <input id="f-metadata-name" type="text" readonly=editing
                        prop:value=move || name.get()
                        on:input:target=move |ev| {
                            let typed = ev.target().value();
                            change(&mut |d| d.set_name(&typed));
                            model.touch("metadata.name");
                        }/>
                    {move || model.shown_errors("metadata.name").into_iter().map(|message| view! {
                        <p class="field-error" role="alert">{message}</p>
                    }).collect_view()}
                </div>
                {pick_namespace.then(|| view! {
                    <div class="field">
                        <label class="field-label" for="f-metadata-namespace">"namespace"</label>
                        <Transition>
                            {move || match namespaces.get() {
                                Some(Ok(names)) if !names.is_empty() => view! {
                                    <select id="f-metadata-namespace" on:change:target=move |ev| {
                                        let picked = ev.target().value();
                                        change(&mut |d| d.set_namespace(&picked));
                                    }>
                                        {names.into_iter().map(|n| {
                                            let selected = Some(&n) == namespace.get_untracked().as_ref();
                                            view! { <option value=n.clone() selected=selected>{n.clone()}</option> }
                                        }).collect_view()}
                                    </select>
                                }.into_any(),
                                // A person whose access is to some namespaces only (a
                                // team's) may not list them all: they name theirs.
                                _ => view! {
                                    <input id="f-metadata-namespace" type="text" data-testid="namespace-typed"
                                        prop:value=move || namespace.get().unwrap_or_default()
                                        on:input:target=move |ev| {
                                            let typed = ev.target().value();
                                            change(&mut |d| d.set_namespace(&typed));
                                        }/>
                                    <p class="field-hint">"Your access does not list namespaces: type the one to create in."</p>
                                }.into_any(),
                            }}
                        </Transition>
                    </div>
                })}
            </section>
            {is_stack.then(|| view! { <StackPicker value=value set=set_field/> })}
            {move || latest_spec.get().map(|y| view! {
                <section class="panel" data-testid="server-version">
                    <h2>"The server's current spec"</h2>
                    <pre class="yaml">{y}</pre>
                </section>
            })}
            <div class="view-switch" role="tablist">
                <button type="button" role="tab" class:active=move || !show_yaml.get() on:click=move |_| show_yaml.set(false)>"Form"</button>
                <button type="button" role="tab" class:active=move || show_yaml.get() on:click=move |_| show_yaml.set(true)>"YAML"</button>
            </div>
            <section class="panel" class:hidden-panel=move || show_yaml.get()>
                <h2>"Spec"</h2>
                <FieldSearch form=form.clone()/>
                <FieldView field=form path=FieldPath::top("spec")/>
            </section>
            <section class="panel" class:hidden-panel=move || !show_yaml.get()>
                <h2>"The whole object as YAML"</h2>
                <textarea class="yaml-input whole" rows="18" spellcheck="false" data-testid="object-yaml-editor"
                    prop:value=move || draft_now().to_yaml()
                    on:change:target=move |ev| apply_yaml(ev.target().value())
                ></textarea>
                {move || yaml_problem.get().map(|p| view! { <p class="field-error" role="alert">{p}</p> })}
                {move || {
                    let mut errs = client_errors.get();
                    errs.extend(server_errors.get());
                    (!errs.is_empty()).then(|| view! {
                        <ul class="yaml-errors">
                            {errs.into_iter().map(|e| view! { <li><span class="mono">{e.path}</span>": "{e.message}</li> }).collect_view()}
                        </ul>
                    })
                }}
            </section>
            <div class="form-actions">
                <button type="submit" class="primary" disabled=move || submitting.get()>
                    {move || match (submitting.get(), editing) {
                        (true, _) => "Saving…",
                        (false, true) => "Save",
                        (false, false) => "Create",
                    }}
                </button>
            </div>
        </form>
    }
}
