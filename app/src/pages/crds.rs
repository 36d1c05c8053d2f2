//! The list of the cluster's CustomResourceDefinitions, read again as CRDs come and go.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::list_crds;
use crate::components::crd_table::CrdTable;
use crate::components::error_banner::ErrorBanner;
use crate::live::follow;
use portico_core::live::protocol::{ServerMessage, Topic};

#[component]
pub fn CrdsPage() -> impl IntoView {
    let crds = Resource::new(|| (), |_| list_crds());
    let filter = RwSignal::new(String::new());
    // The table stays, filtered as it was, until the new list is in.
    follow(Topic::Crds, move |message| {
        if matches!(message, ServerMessage::Changed { .. }) {
            crds.refetch();
        }
    });
    view! {
        <Title text="Resource types"/>
        <div class="page-head">
            <div>
                <h1>"Resource types"</h1>
                <p class="subtle">"Every CustomResourceDefinition the cluster serves."</p>
            </div>
            <input
                class="filter"
                type="search"
                placeholder="Filter by kind, group, short name…"
                aria-label="Filter resource types"
                bind:value=filter
            />
        </div>
        <Transition fallback=|| view! { <p class="empty">"Loading resource types…"</p> }>
            {move || {
                crds.get()
                    .map(|result| match result {
                        Ok(list) => view! { <CrdTable crds=list filter=filter.into()/> }.into_any(),
                        Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
                    })
            }}
        </Transition>
    }
}
