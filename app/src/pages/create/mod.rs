//! Create an object of any CRD from a form generated from its schema, or edit one:
//! checked as you type in the browser, dry-run on the API server (debounced) as you
//! go, dry-run again before the real write; the server's causes land on the fields
//! they name. [`draft`] holds the object, [`object_form`] the form and its checks.

mod draft;
mod kept_draft;
mod object_form;
mod version_picker;

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

use crate::api::{fetch_form_spec, fetch_object_json};
use crate::components::error_banner::ErrorBanner;
#[cfg(feature = "hydrate")]
pub use kept_draft::save_for_reload;
use object_form::ObjectForm;
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
