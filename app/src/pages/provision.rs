//! Self-service provisioning: the stack catalog as cards, searchable, each with its
//! plans; a card or a plan leads to the Stack form with them filled in. Below: kept
//! volumes, and the person's own Stacks and bindings, live.

use leptos::prelude::*;
use leptos_meta::Title;

use crate::api::stack_offers;
use crate::components::error_banner::ErrorBanner;
use crate::components::live_table::LiveTable;
use crate::pages::stack::kept::KeptVolumes;
use crate::pages::stack::offer_path;
use crate::pages::stack::picker::plan_size;
use portico_core::encode::percent_encode;
use portico_core::payload::StackOffer;
use portico_core::portico_kinds;
use portico_core::table::state::SortKey;

#[component]
pub fn ProvisionPage() -> impl IntoView {
    let offers = Resource::new(|| (), |_| stack_offers());
    let search = RwSignal::new(String::new());
    view! {
        <Title text="Provision"/>
        <div class="page-head">
            <div>
                <h1>"Provision a stack"</h1>
                <p class="subtle">"Pick what you need and its size; Portico's reconciler creates it in your namespace and keeps it as you asked."</p>
            </div>
            <a class="button" href=crate::base::url(&portico_kinds::stacks().page_path())>"Your stacks"</a>
        </div>
        <input type="search" class="catalog-search" placeholder="Search the catalog…" aria-label="Search the catalog"
            data-testid="catalog-search" prop:value=move || search.get()
            on:input:target=move |ev| search.set(ev.target().value())/>
        <Transition fallback=|| view! { <p class="empty">"Loading the catalog…"</p> }>
            {move || offers.get().map(|result| match result {
                Ok(list) => {
                    // Kept volumes are reattached by the one choice that keeps data.
                    let stateful: Vec<String> = list.iter().filter(|o| o.stateful).map(|o| o.choice.clone()).collect();
                    let choice = match stateful.as_slice() { [one] => Some(one.clone()), _ => None };
                    let all = StoredValue::new(list);
                    view! {
                        <div class="offers">
                            {move || {
                                let wanted = search.get().trim().to_lowercase();
                                let shown: Vec<StackOffer> = all.with_value(|list| {
                                    list.iter().filter(|o| matches(o, &wanted)).cloned().collect()
                                });
                                if shown.is_empty() {
                                    view! { <p class="empty" data-testid="no-offers">{format!("Nothing in the catalog matches “{wanted}”.")}</p> }.into_any()
                                } else {
                                    shown.into_iter().map(|o| view! { <OfferCard offer=o/> }).collect_view().into_any()
                                }
                            }}
                        </div>
                        <KeptVolumes choice=choice/>
                    }.into_any()
                }
                Err(e) => view! { <ErrorBanner message=e.to_string()/> }.into_any(),
            })}
        </Transition>
        <OwnStacks/>
    }
}

/// Whether an offer matches a search: its choice, title, description or plans.
fn matches(offer: &StackOffer, wanted: &str) -> bool {
    if wanted.is_empty() {
        return true;
    }
    let plans = offer
        .plans
        .iter()
        .flat_map(|p| [p.name.as_str(), p.description.as_str()]);
    [
        offer.choice.as_str(),
        offer.title.as_str(),
        offer.description.as_str(),
    ]
    .into_iter()
    .chain(plans)
    .chain(offer.versions.iter().map(String::as_str))
    .any(|text| text.to_lowercase().contains(wanted))
}

/// The person's Stacks and bindings, live, in every namespace they may list.
#[component]
fn OwnStacks() -> impl IntoView {
    let table = |resource| portico_kinds::table(&resource, None, None);
    let stacks_sort = RwSignal::new(None::<SortKey>);
    let bindings_sort = RwSignal::new(None::<SortKey>);
    let toggle = |sort: RwSignal<Option<SortKey>>| {
        Callback::new(move |column: String| {
            sort.update(|s| *s = SortKey::toggled(s.as_ref(), column))
        })
    };
    view! {
        <section class="panel" data-testid="own-stacks">
            <h2>"Your stacks"</h2>
            <LiveTable query=Signal::stored(table(portico_kinds::stacks())) wide=false filter=String::new()
                sort=stacks_sort on_sort=toggle(stacks_sort) link_rows=true/>
        </section>
        <section class="panel" data-testid="own-bindings">
            <h2>"Your bindings"</h2>
            <LiveTable query=Signal::stored(table(portico_kinds::bindings())) wide=false filter=String::new()
                sort=bindings_sort on_sort=toggle(bindings_sort) link_rows=true/>
        </section>
    }
}

#[component]
fn OfferCard(offer: StackOffer) -> impl IntoView {
    let href = offer_path(&offer.choice);
    let versions = offer.versions.join(", ");
    let plans = offer.plans.clone();
    let default_plan = offer.default_plan.clone();
    let title = offer.title.clone();
    view! {
        <article class="offer panel" data-choice=offer.choice.clone()>
            <h2>{offer.title.clone()}</h2>
            <p>{offer.description.clone()}</p>
            <dl class="facts">
                <dt>"Image"</dt><dd class="mono">{offer.image.clone()}</dd>
                <dt>"Versions"</dt><dd class="mono">{versions}</dd>
                <dt>"Port"</dt><dd class="mono">{offer.port}</dd>
                <dt>"Storage"</dt><dd>{if offer.stateful { "persistent volume per replica" } else { "none" }}</dd>
            </dl>
            {(!plans.is_empty()).then(|| view! {
                <div class="plans" role="group" aria-label=format!("{title} plans")>
                    {plans.into_iter().map(|p| {
                        let plan_href = format!("{href}&spec.plan={}", percent_encode(&p.name));
                        let is_default = default_plan.as_deref() == Some(p.name.as_str());
                        view! {
                            <a class="plan" href=crate::base::url(&plan_href) data-plan=p.name.clone()>
                                <span class="plan-name">{p.name.clone()}{is_default.then(|| view! { <span class="pill">"default"</span> })}</span>
                                <span class="small">{p.description.clone()}</span>
                                <span class="mono small subtle">{plan_size(&p)}</span>
                            </a>
                        }
                    }).collect_view()}
                </div>
            })}
            <a class="button primary" href=crate::base::url(&href)>{format!("Provision {}", offer.title)}</a>
        </article>
    }
}
