//! Create an object of any CRD from a form generated from its schema, or edit one:
//! checked as you type in the browser, dry-run on the API server (debounced) as you
//! go, dry-run again before the real write; the server's causes land on the fields
//! they name. [`draft`] holds the object, [`object_form`] the form and its checks.

mod draft;
mod kept_draft;
mod namespace_field;
mod object_form;
mod version_picker;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use leptos_router::hooks::use_query_map;

use crate::api::{fetch_form_spec, fetch_object_json, stack_offers};
use crate::components::error_banner::ErrorBanner;
#[cfg(feature = "hydrate")]
pub use kept_draft::save_for_reload;
use object_form::ObjectForm;
use portico_core::portico_kinds;
use portico_core::resource::ObjectKey;
use portico_core::schema::draft::Draft;

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

/// The Provision form (`/provision/new?spec.choice=mysql`): a Stack's create form
/// made for people, headed with the catalog's title for the choice.
#[component]
pub fn ProvisionFormPage() -> impl IntoView {
    let choice = use_query_map().with_untracked(|q| q.get("spec.choice"));
    let loaded = Resource::new(
        || (),
        |_| async move {
            let spec = fetch_form_spec(portico_kinds::stacks()).await?;
            let offers = stack_offers().await?;
            Ok::<_, crate::error::BackendError>((spec, offers))
        },
    );
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading the catalog…"</p> }>
            {move || loaded.get().map(|result| match result {
                Ok((spec, offers)) => {
                    let title = offers
                        .iter()
                        .find(|o| Some(&o.choice) == choice.as_ref())
                        .map(|o| o.title.clone());
                    let heading = match title {
                        Some(title) => format!("Provision {title}"),
                        None => "Provision a stack".to_string(),
                    };
                    view! {
                        <ObjectForm resource=portico_kinds::stacks() spec existing=None for_people=true heading/>
                    }.into_any()
                }
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
    let target = Memo::new(move |_| params.with(super::object_from_params));
    let loaded = Resource::new(
        move || target.get(),
        |key: ObjectKey| async move {
            let spec = fetch_form_spec(key.resource.clone()).await?;
            let object = fetch_object_json(key).await?;
            Ok::<_, crate::error::BackendError>((spec, object))
        },
    );
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
            {move || loaded.get().map(|result| match result {
                Ok((spec, object)) => view! {
                    <ObjectForm resource=target.get_untracked().resource spec existing=Some(object)/>
                }.into_any(),
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
    }
}
