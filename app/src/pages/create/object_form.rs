//! The create and edit form: the draft, checked in the browser as it changes,
//! dry-run on the API server (debounced, only the latest edit's answer kept), and
//! saved after one more dry run; a conflict keeps every edit, rebased on the
//! server's current object.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_navigate;
use leptos_use_timeout_fn::{UseTimeoutFnReturn, use_timeout_fn};
use serde_json::Value;

use super::draft::{DraftCells, use_draft};
use super::kept_draft;
use super::namespace_field::NamespaceField;
use super::version_picker::version_picker;
use crate::api::{fetch_object_json, replace_object, submit_object};
use crate::components::form::{FieldSearch, FieldView, FormModel};
use crate::error::BackendError;
use crate::last_namespace;
use crate::pages::stack::picker::stack_picker;
use crate::pages::stack::stack_fields::SHOWN_TO_PEOPLE;
use crate::yaml;
use portico_core::payload::{FormSpec, SubmitOutcome};
use portico_core::resource::{ObjectKey, ResourceRef, is_path_segment};
use portico_core::schema::draft::{Draft, DraftError};
use portico_core::schema::field_path::FieldPath;
use portico_core::schema::form::spec_form;
use portico_core::schema::name_rule::{name_rule_problems, name_rules_said};
use portico_core::schema::openapi::Schema;
use portico_core::schema::validate::{FieldError, validate};

/// How long typing pauses before the API server is asked, in milliseconds.
const CHECK_AFTER_MS: f64 = 400.0;

/// Messages for the name: Kubernetes' own rule, then the kind's (a CEL rule at the
/// object's root, as a Stack's), so a name the API server would refuse is said as typed.
fn name_errors(name: &str, schema: &Schema) -> Vec<FieldError> {
    let messages = if name.is_empty() {
        vec!["Required.".to_string()]
    } else if !is_path_segment(name) {
        vec![
            "Use lowercase letters, digits, '-' and '.', starting and ending with a letter or digit."
                .to_string(),
        ]
    } else {
        name_rule_problems(schema, name)
    };
    messages
        .into_iter()
        .map(|message| FieldError {
            path: "metadata.name".into(),
            message,
        })
        .collect()
}

/// Where the API server's refusal is shown: causes naming a field go to that field;
/// the rest (a rule at the object's root, which the API server names `<nil>`, or no
/// field at all) to the form's banner, in the API server's words.
fn split_causes(outcome: &SubmitOutcome) -> (Vec<FieldError>, Option<String>) {
    let SubmitOutcome::Rejected(r) = outcome else {
        return (vec![], None);
    };
    let at_root = |field: &str| field.is_empty() || field == "<nil>";
    let fields: Vec<FieldError> = r
        .causes
        .iter()
        .filter(|c| !at_root(&c.field))
        .map(|c| FieldError {
            path: c.field.clone(),
            message: c.message.clone(),
        })
        .collect();
    let root: Vec<String> = r
        .causes
        .iter()
        .filter(|c| at_root(&c.field))
        .map(|c| without_nil(&c.message))
        .collect();
    let general = if !root.is_empty() {
        Some(root.join(" "))
    } else if fields.is_empty() {
        Some(without_nil(&r.message))
    } else {
        None
    };
    (fields, general)
}

/// `text` as a sentence: a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.trim().chars();
    let Some(first) = chars.next() else {
        return String::new();
    };
    let rest = chars.as_str().trim_end_matches('.');
    format!("{}{rest}.", first.to_uppercase())
}

/// The API server's text without the `<nil>: ` it puts before a root rule's message.
fn without_nil(text: &str) -> String {
    text.replace("<nil>: ", "")
}

/// What a save came to: the API server's verdict, or a conflict (someone saved
/// first) with the object as the server has it now.
#[derive(Clone)]
enum Saved {
    Verdict(SubmitOutcome),
    Conflict(Value),
}

/// Sends the body: a replacement of the object at `editing`, or a create; a dry run
/// or for real.
async fn send(
    editing: Option<ObjectKey>,
    body: Value,
    dry_run: bool,
) -> Result<SubmitOutcome, BackendError> {
    match editing {
        Some(key) => replace_object(key, body, dry_run).await,
        None => submit_object(body, dry_run).await,
    }
}

/// Saves: a dry run first (nothing is written that fails one), then the write; on a
/// conflict, reads what the server has now.
async fn save(editing: Option<ObjectKey>, body: Value) -> Result<Saved, BackendError> {
    let verdict = match send(editing.clone(), body.clone(), true).await? {
        SubmitOutcome::Accepted { .. } => send(editing.clone(), body, false).await?,
        rejected => rejected,
    };
    match (verdict, editing) {
        (SubmitOutcome::Rejected(r), Some(key)) if r.code == 409 => {
            Ok(Saved::Conflict(fetch_object_json(key).await?))
        }
        (verdict, _) => Ok(Saved::Verdict(verdict)),
    }
}

/// The note after the page had to load again and what was typed came back.
fn restored_note(_: &[String]) -> String {
    "The page had to load again (Portico was updated meanwhile): what you had typed is \
     back. Check it before you save."
        .into()
}

/// The same on an edit, where what was typed is put on top of the server's object, as
/// after a conflict.
fn restored_note_on_edit(clashes: &[String]) -> String {
    let clash_note = clash_note(clashes, "someone else");
    format!(
        "The page had to load again (Portico was updated meanwhile): what you had typed is \
         back, on top of the object as the server has it now.{clash_note} Check it before \
         you save."
    )
}

/// The banner after a conflict: what happened, and where both sides changed.
fn conflict_note(clashes: &[String]) -> String {
    let clash_note = clash_note(clashes, "they");
    format!(
        "Someone changed this object after you opened it. Your edits are kept, \
         on top of the server's current version (shown below).{clash_note} \
         Save again to apply them."
    )
}

/// Where the person and `other` (as the sentence before names them) both changed the
/// object, their edit kept.
fn clash_note(clashes: &[String], other: &str) -> String {
    if clashes.is_empty() {
        String::new()
    } else {
        format!(
            " You and {other} both changed {}: yours is kept.",
            clashes.join(", ")
        )
    }
}

#[component]
pub fn ObjectForm(
    resource: ResourceRef,
    spec: FormSpec,
    existing: Option<Value>,
    /// What was typed under another version, carried into this one.
    #[prop(optional)]
    carry: Option<StoredValue<Option<Draft>>>,
    /// The Provision form: a Stack's fields in words, the namespace picked among those
    /// the person may create in, and the generic form one click away ("All fields").
    #[prop(optional)]
    for_people: bool,
    /// The page's heading, when not "New KIND".
    #[prop(optional)]
    heading: Option<String>,
) -> impl IntoView {
    let schema = Schema::from_value(&spec.schema);
    let form = spec_form(&schema);
    let namespaced = spec.namespaced;
    let (draft, mut prefilled) = use_draft(&spec, &form, existing, carry);
    // Every field the Provision form shows is seen: a link filling one in needs no note.
    if for_people {
        prefilled.retain(|(key, _)| !SHOWN_TO_PEOPLE.contains(&key.as_str()));
    }
    let all_fields = RwSignal::new(!for_people);
    let editing = draft.editing;
    let pick_namespace = namespaced && !editing;
    let restored = RwSignal::new(None::<String>);
    let note = if editing {
        restored_note_on_edit
    } else {
        restored_note
    };
    kept_draft::keep_across_reload(draft, restored, note);
    let existing_name = editing.then(|| draft.name.get_untracked());
    let picker = stack_picker_beside(&resource, draft, all_fields);
    // The server's spec after a conflict, shown as YAML.
    let latest_spec = RwSignal::new(None::<Value>);
    let latest_yaml = yaml::yaml_of(latest_spec.into());
    let show_yaml = RwSignal::new(false);
    let yaml_problem = RwSignal::new(None::<String>);

    // The kind's own rule for names, said before anything is typed.
    let name_rules = name_rules_said(&schema);
    let client_errors = client_errors_of(schema, draft, namespaced);
    let server_errors = RwSignal::new(Vec::<FieldError>::new());
    let banner = RwSignal::new(None::<String>);
    let model = FormModel::new(draft.value, client_errors.into(), server_errors.into());
    model.provide();
    model.place("metadata.name");
    let spec = StoredValue::new(spec);
    let (object_yaml, read_yaml) =
        whole_object_yaml(draft, show_yaml, model.yaml_reading, yaml_problem);
    let checking = check_while_typing(
        draft,
        resource.clone(),
        client_errors,
        server_errors,
        banner,
    );
    let (on_submit, submitting) = save_on_submit(
        draft,
        resource.clone(),
        model,
        client_errors,
        server_errors,
        banner,
        latest_spec,
    );

    let (list_href, list_name) = list_link(&resource, for_people);
    let heading = page_heading(&spec.with_value(|s| s.kind.clone()), existing_name, heading);
    view! {
        <Title text=heading.clone()/>
        <p class="crumbs"><a href=list_href>{list_name}</a>{if editing { " / edit" } else { " / new" }}</p>
        {page_head(heading, spec, resource, for_people, editing, checking)}
        {form_notices(prefilled, restored, banner, model)}
        <form class="object-form" on:submit=on_submit novalidate>
            {metadata_section(draft, model, name_rules, pick_namespace, for_people)}
            {move || picker.get().map(|picker| picker.run())}
            {move || latest_spec.with(Option::is_some).then(|| server_version(latest_yaml))}
            {for_people.then(|| all_fields_toggle(all_fields))}
            <Show when=move || all_fields.get()>
            <div class="view-switch" role="tablist">
                <button type="button" role="tab" class:active=move || !show_yaml.get() on:click=move |_| show_yaml.set(false)>"Form"</button>
                <button type="button" role="tab" class:active=move || show_yaml.get() on:click=move |_| show_yaml.set(true)>"YAML"</button>
            </div>
            <section class="panel" class:hidden-panel=move || show_yaml.get()>
                <h2>"Spec"</h2>
                <FieldSearch form=form.clone()/>
                <FieldView field=form.clone() path=FieldPath::top("spec")/>
            </section>
            {yaml_panel(show_yaml, object_yaml, read_yaml, yaml_problem, client_errors, server_errors)}
            </Show>
            {submit_button(submitting, editing)}
        </form>
    }
}

/// The Stack picker beside a Stack's form (a Stack's plan and version are picked from
/// the catalog), set once it has loaded; it stays `None` for any other kind.
fn stack_picker_beside(
    resource: &ResourceRef,
    draft: DraftCells,
    all_fields: RwSignal<bool>,
) -> RwSignal<Option<ViewFn>> {
    let is_stack = resource.group == "portico.dev" && resource.plural == "stacks";
    let value = draft.value;
    let set_field = Callback::new(move |(key, text): (String, String)| draft.set_text(&key, text));
    let picker = RwSignal::new(None::<ViewFn>);
    if is_stack {
        // In the browser only, once: the picker is a part of its own.
        Effect::new(move |_| {
            leptos::task::spawn_local(async move {
                let simple = Signal::derive(move || !all_fields.get());
                picker.try_set(Some(stack_picker(value, set_field, simple).await));
            });
        });
    }
    picker
}

/// The draft's problems found in the browser: the name's, a namespace missing, and
/// whatever the schema refuses.
fn client_errors_of(schema: Schema, draft: DraftCells, namespaced: bool) -> Memo<Vec<FieldError>> {
    let (value, name, namespace) = (draft.value, draft.name, draft.namespace);
    let schema = StoredValue::new(schema);
    Memo::new(move |_| {
        let mut errors = schema.with_value(|s| name_errors(&name.get(), s));
        if namespaced && namespace.with(|n| n.as_deref().is_none_or(str::is_empty)) {
            errors.push(FieldError {
                path: "metadata.namespace".into(),
                message: "Type the namespace to create it in.".into(),
            });
        }
        errors.extend(value.with(|v| schema.with_value(|s| validate(s, v, ""))));
        errors
    })
}

/// The whole object as YAML, and the reader of what is typed there. The YAML view
/// edits the same object as the form, so switching loses nothing. It is written as YAML
/// only while shown (not on every edit of the form); hidden, it keeps what it last
/// showed, so text typed there (refused, with its problem) stays unless the form
/// changed the object. Read back when it is changed.
fn whole_object_yaml(
    draft: DraftCells,
    show_yaml: RwSignal<bool>,
    yaml_reading: RwSignal<usize>,
    yaml_problem: RwSignal<Option<String>>,
) -> (Signal<String>, yaml::YamlReader) {
    let shown_object = Memo::new(move |before: Option<&Option<Value>>| {
        if show_yaml.get() {
            Some(draft.now().body())
        } else {
            before.cloned().flatten()
        }
    });
    let object_yaml = yaml::yaml_of(shown_object.into());
    let read_yaml = yaml::YamlReader::new(
        yaml_reading,
        Callback::new(move |read: Result<Option<Value>, String>| {
            let outcome = match read {
                Ok(object) => {
                    let mut outcome = Ok(());
                    draft.change(|d| outcome = d.apply_object(object.unwrap_or(Value::Null)));
                    outcome
                }
                Err(why) => Err(DraftError::NotYaml(why)),
            };
            yaml_problem.set(outcome.err().map(|e| e.to_string()));
        }),
    );
    (object_yaml, read_yaml)
}

/// The object a check or a save addresses: the one edited, or none for a new one.
/// Read as each check or save starts: the page may be gone when it answers.
fn editing_key(draft: DraftCells, resource: &ResourceRef) -> Option<ObjectKey> {
    draft.editing.then(|| draft.key(resource.clone()))
}

/// The dry run while typing, debounced: a new edit cancels the wait and the answer
/// still on its way, so only the latest edit's answer is shown. Returns whether a
/// check is under way.
fn check_while_typing(
    draft: DraftCells,
    resource: ResourceRef,
    client_errors: Memo<Vec<FieldError>>,
    server_errors: RwSignal<Vec<FieldError>>,
    banner: RwSignal<Option<String>>,
) -> Memo<bool> {
    let value = draft.value;
    // Of the same type as the save's action, so the two share their code in the wasm.
    let check = Action::new(move |body: &Value| {
        let checking = send(editing_key(draft, &resource), body.clone(), true);
        async move { checking.await.map(Saved::Verdict) }
    });
    let checking = check.pending();
    let in_flight = StoredValue::new(None::<ActionAbortHandle>);
    let UseTimeoutFnReturn {
        start: check_later,
        stop: stop_waiting,
        ..
    } = use_timeout_fn(
        move |body: Value| in_flight.set_value(Some(check.dispatch(body))),
        CHECK_AFTER_MS,
    );
    Effect::new(move |first: Option<()>| {
        let body = value.get();
        stop_waiting();
        if let Some(answer) = in_flight.try_update_value(Option::take).flatten() {
            answer.abort();
        }
        if first.is_none() || !client_errors.with(Vec::is_empty) {
            server_errors.set(vec![]);
            return;
        }
        check_later(body);
    });
    Effect::new(move |_| {
        check.value().with(|answer| match answer {
            Some(Ok(Saved::Verdict(verdict))) => {
                let (fields, general) = split_causes(verdict);
                server_errors.set(fields);
                banner.set(general);
            }
            Some(Err(e)) => banner.set(Some(e.to_string())),
            // A dry run reads nothing back.
            Some(Ok(Saved::Conflict(_))) | None => {}
        })
    });
    checking
}

/// Saving: the form's submit handler (which waits for YAML typed just before to be
/// read), and what the answer leads to: the object's page, every edit put on top of
/// the server's object after a conflict, or the API server's refusal on the fields.
/// Returns the handler and whether a save is under way.
fn save_on_submit(
    draft: DraftCells,
    resource: ResourceRef,
    model: FormModel,
    client_errors: Memo<Vec<FieldError>>,
    server_errors: RwSignal<Vec<FieldError>>,
    banner: RwSignal<Option<String>>,
    latest_spec: RwSignal<Option<Value>>,
) -> (impl Fn(leptos::ev::SubmitEvent) + 'static, Memo<bool>) {
    let resource_for_save = resource.clone();
    let save =
        Action::new(move |body: &Value| save(editing_key(draft, &resource_for_save), body.clone()));
    let submitting = save.pending();
    let submit = move || {
        if !client_errors.with_untracked(Vec::is_empty) {
            banner.set(Some("Fix the fields marked below first.".into()));
            model.reveal_errors();
            return;
        }
        save.dispatch(draft.value.get_untracked());
    };
    // YAML typed just before the click is still being read: the submit waits for it.
    let yaml_reading = model.yaml_reading;
    let submit_after_yaml = RwSignal::new(false);
    Effect::new(move |_| {
        if yaml_reading.get() == 0 && submit_after_yaml.get_untracked() {
            submit_after_yaml.set(false);
            submit();
        }
    });
    let on_submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if yaml_reading.get_untracked() > 0 {
            submit_after_yaml.set(true);
            return;
        }
        submit();
    };
    let navigate = use_navigate();
    Effect::new(move |_| {
        let Some(saved) = save.value().get() else {
            return;
        };
        match saved {
            Ok(Saved::Verdict(SubmitOutcome::Accepted { name, namespace })) => {
                // Saved: should the next page's part fail to load, nothing comes back.
                kept_draft::forget();
                if let Some(namespace) = &namespace {
                    last_namespace::remember(namespace);
                }
                navigate(
                    &resource.object_path(namespace.as_deref(), &name),
                    Default::default(),
                );
            }
            // Someone else saved first: keep every edit, put them on top of what the
            // server has now, and base the next save on it.
            Ok(Saved::Conflict(latest)) => {
                latest_spec.set(Some(latest.get("spec").cloned().unwrap_or(Value::Null)));
                let mut clashes = Vec::new();
                draft.change(|d| clashes = d.rebase(latest));
                banner.set(Some(conflict_note(&clashes)));
            }
            Ok(Saved::Verdict(rejected)) => {
                let (fields, general) = split_causes(&rejected);
                server_errors.set(fields);
                banner.set(Some(general.unwrap_or_else(|| {
                    "The API server refused it; see the fields marked below.".into()
                })));
            }
            Err(e) => banner.set(Some(e.to_string())),
        }
    });
    (on_submit, submitting)
}

/// Where the crumbs lead back to, and its name: the Provision page from the Provision
/// form, else the kind's list.
fn list_link(resource: &ResourceRef, for_people: bool) -> (String, String) {
    if for_people {
        (crate::base::url("/provision"), "provision".to_string())
    } else {
        (
            crate::base::url(&resource.page_path()),
            resource.plural.clone(),
        )
    }
}

/// The page's heading: the object edited, else the heading given, else the kind.
fn page_heading(kind: &str, existing_name: Option<String>, heading: Option<String>) -> String {
    match (existing_name, heading) {
        (Some(n), _) => format!("Edit {kind} {n}"),
        (None, Some(heading)) => heading,
        (None, None) => format!("New {kind}"),
    }
}

/// The page's head: the heading, the kind's API version, the version picker (not on
/// the Provision form) and the badge shown while the API server checks the draft.
fn page_head(
    heading: String,
    spec: StoredValue<FormSpec>,
    resource: ResourceRef,
    for_people: bool,
    editing: bool,
    checking: Memo<bool>,
) -> impl IntoView {
    view! {
        <div class="page-head">
            <div>
                <h1>{heading}</h1>
                <p class="subtle mono">{spec.with_value(|s| format!("{} {}", s.api_version, s.kind))}</p>
            </div>
            {(!for_people).then(|| version_picker(&resource, spec.with_value(|s| s.versions.clone()), editing))}
            <span class="badge pending" class:hidden=move || !checking.get()>"Checking with the API server…"</span>
        </div>
    }
}

/// The notes above the form: what the link followed filled in, what was typed brought
/// back after a reload, the form's banner, and the API server's causes for fields the
/// form does not show.
fn form_notices(
    prefilled: Vec<(String, String)>,
    restored: RwSignal<Option<String>>,
    banner: RwSignal<Option<String>>,
    model: FormModel,
) -> impl IntoView {
    view! {
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
        {move || restored.get().map(|note| view! {
            <div class="callout warn-callout" role="note" data-testid="draft-restored">{note}</div>
        })}
        {move || banner.get().map(|b| view! { <div class="error-banner" role="alert" data-testid="form-banner">{b}</div> })}
        // The API server's causes for fields the form does not show (labels typed in
        // the YAML view, a field of a collapsed section), in its words, with the path.
        {move || {
            let unplaced = model.unplaced_errors();
            (!unplaced.is_empty()).then(|| view! {
                <div class="error-banner" role="alert" data-testid="form-unplaced">
                    <ul class="unplaced-errors">
                        {unplaced.into_iter().map(|e| view! {
                            <li><span class="mono">{e.path}</span>": "{e.message}</li>
                        }).collect_view()}
                    </ul>
                </div>
            })
        }}
    }
}

/// The name and namespace: the name (fixed on an edit) with the kind's rule for names,
/// and the namespace when one is picked (a new namespaced object).
fn metadata_section(
    draft: DraftCells,
    model: FormModel,
    name_rules: Vec<String>,
    pick_namespace: bool,
    for_people: bool,
) -> impl IntoView {
    let (name, editing) = (draft.name, draft.editing);
    view! {
        <section class="panel">
            <h2>{if for_people { "Name and namespace" } else { "Metadata" }}</h2>
            <div class="field" data-path="metadata.name">
                <label class="field-label" for="f-metadata-name">{if for_people { "Name" } else { "name" }}<span class="req">" *"</span></label>
                <input id="f-metadata-name" type="text" readonly=editing
                    prop:value=move || name.get()
                    on:input:target=move |ev| {
                        let typed = ev.target().value();
                        draft.change(|d| d.set_name(&typed));
                        model.touch("metadata.name");
                    }/>
                {(!editing && !name_rules.is_empty()).then(|| view! {
                    <p class="field-help" data-testid="name-rule">{sentence(&name_rules.join("; "))}</p>
                })}
                {move || model.shown_errors("metadata.name").into_iter().map(|message| view! {
                    <p class="field-error" role="alert">{message}</p>
                }).collect_view()}
            </div>
            {pick_namespace.then(|| view! { <NamespaceField draft=draft for_people=for_people/> })}
        </section>
    }
}

/// The server's current spec, shown after a conflict.
fn server_version(latest_yaml: Signal<String>) -> impl IntoView {
    view! {
        <section class="panel" data-testid="server-version">
            <h2>"The server's current spec"</h2>
            <pre class="yaml">{move || latest_yaml.get()}</pre>
        </section>
    }
}

/// On the Provision form: the switch to every field of a Stack and back.
fn all_fields_toggle(all_fields: RwSignal<bool>) -> impl IntoView {
    view! {
        <p class="all-fields">
            <button type="button" class="link-button" data-testid="all-fields"
                on:click=move |_| all_fields.update(|all| *all = !*all)>
                {move || if all_fields.get() { "Fewer fields" } else { "All fields…" }}
            </button>
            <span class="subtle small">{move || if all_fields.get() {
                " Back to the Provision form; nothing you typed is lost."
            } else {
                " Every field of a Stack (its own resources, too) and its YAML; nothing you typed is lost."
            }}</span>
        </p>
    }
}

/// The whole object as YAML, editable, with what was refused in it and every problem
/// of the draft (the browser's, then the API server's).
fn yaml_panel(
    show_yaml: RwSignal<bool>,
    object_yaml: Signal<String>,
    read_yaml: yaml::YamlReader,
    yaml_problem: RwSignal<Option<String>>,
    client_errors: Memo<Vec<FieldError>>,
    server_errors: RwSignal<Vec<FieldError>>,
) -> impl IntoView {
    view! {
        <section class="panel" class:hidden-panel=move || !show_yaml.get()>
            <h2>"The whole object as YAML"</h2>
            <textarea class="yaml-input whole" rows="18" spellcheck="false" data-testid="object-yaml-editor"
                prop:value=move || object_yaml.get()
                on:focus=|_| yaml::warm_reader()
                on:change:target=move |ev| read_yaml.read(ev.target().value())
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
    }
}

/// The submit button: "Create" or "Save", "Saving…" while a save is under way.
fn submit_button(submitting: Memo<bool>, editing: bool) -> impl IntoView {
    view! {
        <div class="form-actions">
            <button type="submit" class="primary" disabled=move || submitting.get()>
                {move || match (submitting.get(), editing) {
                    (true, _) => "Saving…",
                    (false, true) => "Save",
                    (false, false) => "Create",
                }}
            </button>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use portico_core::payload::{ApiRejection, FieldCause};

    fn refused(causes: &[(&str, &str)]) -> SubmitOutcome {
        SubmitOutcome::Rejected(ApiRejection {
            code: 422,
            reason: "Invalid".into(),
            message: "Stack.portico.dev \"shop.db\" is invalid: <nil>: Invalid value: \"object\": a Stack's name starts with a letter".into(),
            causes: causes
                .iter()
                .map(|(field, message)| FieldCause {
                    field: field.to_string(),
                    reason: "FieldValueInvalid".into(),
                    message: message.to_string(),
                })
                .collect(),
        })
    }

    #[test]
    fn a_rule_reads_as_a_sentence() {
        assert_eq!(
            sentence("a Stack's name starts with a letter"),
            "A Stack's name starts with a letter."
        );
        assert_eq!(sentence("Already one."), "Already one.");
        assert_eq!(sentence(""), "");
    }

    #[test]
    fn a_rule_at_the_objects_root_goes_to_the_banner_without_nil() {
        let (fields, banner) = split_causes(&refused(&[(
            "<nil>",
            "Invalid value: \"object\": a Stack's name starts with a letter",
        )]));
        assert!(fields.is_empty());
        assert_eq!(
            banner.as_deref(),
            Some("Invalid value: \"object\": a Stack's name starts with a letter")
        );
    }

    #[test]
    fn field_causes_go_to_their_fields_and_root_ones_beside_them_to_the_banner() {
        let (fields, banner) = split_causes(&refused(&[
            ("spec.replicas", "must be at most 10"),
            ("<nil>", "a rule at the root"),
        ]));
        assert_eq!(fields.len(), 1);
        assert_eq!(fields[0].path, "spec.replicas");
        assert_eq!(banner.as_deref(), Some("a rule at the root"));
        let (_, none) = split_causes(&refused(&[("spec.replicas", "must be at most 10")]));
        assert_eq!(none, None);
        let (_, whole) = split_causes(&refused(&[]));
        assert!(whole.is_some_and(|m| !m.contains("<nil>")));
    }
}
