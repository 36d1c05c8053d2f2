//! The list of the cluster's CustomResourceDefinitions.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::list_crds;
use crate::components::crd_table::CrdTable;
use crate::components::error_banner::ErrorBanner;

#[component]
pub fn CrdsPage() -> impl IntoView {
    let crds = Resource::new(|| (), |_| list_crds());
    let filter = RwSignal::new(String::new());
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
