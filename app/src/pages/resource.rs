//! One resource type's live table. The URL holds everything the view shows
//! (`?ns=&wide=&q=&sort=&selector=`), so a view can be shared and reloaded.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{query_signal_with_options, use_navigate, use_params_map};

use crate::api::{fetch_permissions, list_namespaces, list_resources};
use crate::components::live_table::LiveTable;
use crate::components::namespace_picker::NamespacePicker;
use crate::components::usage::{TableUsage, use_table_usage};
use portico_core::resource::{ResourceKind, ResourceRef};
use portico_core::table::state::SortKey;
use portico_core::table::wire::TableQuery;
use portico_core::usage::UsageTarget;

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

#[component]
pub fn ResourcePage() -> impl IntoView {
    let params = use_params_map();
    let resource = Memo::new(move |_| params.with(super::resource_from_params));
    let (ns, set_ns) = query_signal_with_options::<String>("ns", super::quiet());
    let (wide, set_wide) = query_signal_with_options::<bool>("wide", super::quiet());
    let (filter, set_filter) = query_signal_with_options::<String>("q", super::quiet());
    let (sort, set_sort) = query_signal_with_options::<String>("sort", super::quiet());
    let (selector, set_selector) = query_signal_with_options::<String>("selector", super::quiet());
    // The selected row (`namespace/name`): a link to it opens the table scrolled there.
    let (row, set_row) = query_signal_with_options::<String>("row", super::quiet());

    // The namespace looked at is where the person works: a form starts there.
    Effect::new(move |_| {
        if let Some(namespace) = ns.get() {
            crate::last_namespace::remember(&namespace);
        }
    });
    let kinds = Resource::new(|| (), |_| list_resources());
    let namespaces = Resource::new(|| (), |_| list_namespaces());
    let may = Resource::new(
        move || (resource.get(), ns.get()),
        |(r, ns)| fetch_permissions(r, ns),
    );
    let kind: Signal<Option<ResourceKind>> = Signal::derive(move || {
        let r = resource.get();
        kinds.get().and_then(Result::ok).and_then(|all| {
            all.into_iter()
                .find(|k| k.group == r.group && k.plural == r.plural)
        })
    });
    let namespaced = Signal::derive(move || kind.get().is_none_or(|k| k.namespaced));

    let query = Signal::derive(move || {
        let r = resource.get();
        TableQuery {
            group: r.group,
            version: r.version,
            plural: r.plural,
            namespace: if namespaced.get() {
                non_empty(ns.get())
            } else {
                None
            },
            label_selector: non_empty(selector.get()),
            field_selector: None,
        }
    });
    // A Pod table also shows what each Pod uses (kubectl top pod), asked as the person.
    let usage = use_table_usage(Signal::derive(move || {
        let r = resource.get();
        (r.group.is_empty() && r.plural == "pods").then(|| UsageTarget::Table {
            namespace: non_empty(ns.get()),
        })
    }));
    let sort_key = Signal::derive(move || sort.get().as_deref().and_then(SortKey::parse));
    let on_sort = Callback::new(move |column: String| {
        let next = SortKey::toggled(sort_key.get_untracked().as_ref(), column);
        set_sort.set(next.map(|k| k.to_param()));
    });
    let navigate = use_navigate();
    let title = Signal::derive(move || {
        kind.get()
            .map(|k| k.kind)
            .unwrap_or_else(|| resource.get().plural)
    });

    // The kind (title, scope, versions) comes from a resource: read it inside Transition.
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
        <Title text=title/>
        <div class="page-head">
            <div>
                <h1 data-testid="resource-title">{title}</h1>
                <p class="subtle mono">{move || format!("{} · {}", resource.get().api_version(), resource.get().plural)}</p>
            </div>
            <div class="controls">
                <Show when=move || namespaced.get()>
                    <label class="control">
                        "Namespace"
                        <Transition>
                            <NamespacePicker
                                names=Signal::derive(move || namespaces.get().and_then(Result::ok))
                                ns=ns.into()
                                set_ns=Callback::new(move |next| set_ns.set(next))/>
                        </Transition>
                    </label>
                </Show>
                <label class="control">
                    "Version"
                    <select
                        aria-label="Version"
                        on:change:target=move |ev| {
                            let r = resource.get_untracked();
                            let next = ResourceRef::new(&r.group, &ev.target().value(), &r.plural);
                            navigate(&next.page_path(), Default::default());
                        }
                    >
                        {move || {
                            let current = resource.get().version;
                            kind.get().map(|k| k.versions).unwrap_or_else(|| vec![current.clone()]).into_iter().map(|v| {
                                let selected = v == current;
                                view! { <option value=v.clone() selected=selected>{v.clone()}</option> }
                            }).collect_view()
                        }}
                    </select>
                </label>
                <label class="control">
                    "Label selector"
                    <input
                        type="text"
                        class="selector"
                        placeholder="app=web,tier!=db"
                        aria-label="Label selector"
                        prop:value=move || selector.get().unwrap_or_default()
                        on:change:target=move |ev| set_selector.set(non_empty(Some(ev.target().value())))
                    />
                </label>
                <label class="control checkbox">
                    <input
                        type="checkbox"
                        aria-label="Wide"
                        prop:checked=move || wide.get().unwrap_or(false)
                        on:change:target=move |ev| set_wide.set(ev.target().checked().then_some(true))
                    />
                    "Wide"
                </label>
                <Transition fallback=|| ()>
                    {move || kind.get().filter(|k| !k.flags.builtin).map(|_| {
                        let href = format!(
                            "{}{}/new{}",
                            crate::base::get(),
                            resource.get().page_path(),
                            ns.get().map(|n| format!("?ns={n}")).unwrap_or_default()
                        );
                        let allowed = may.get().and_then(Result::ok).is_none_or(|p| p.create);
                        if allowed {
                            view! { <a class="button primary" href=href data-testid="create-link">"Create"</a> }.into_any()
                        } else {
                            view! {
                                <span class="button primary disabled" data-testid="create-link" aria-disabled="true"
                                    title="Your Kubernetes permissions do not allow creating these here.">"Create"</span>
                                <a class="small access-link" data-testid="create-why" href=crate::base::url(&portico_core::access::page_path(ns.get().as_deref()))>"Why?"</a>
                            }.into_any()
                        }
                    })}
                </Transition>
                <input
                    class="filter"
                    type="search"
                    placeholder="Filter rows…"
                    aria-label="Filter rows"
                    prop:value=move || filter.get().unwrap_or_default()
                    on:input:target=move |ev| set_filter.set(non_empty(Some(ev.target().value())))
                />
            </div>
        </div>
        <LiveTable
            query
            wide=Signal::derive(move || wide.get().unwrap_or(false))
            filter=Signal::derive(move || filter.get().unwrap_or_default())
            sort=sort_key
            on_sort
            selected=row
            on_select=Callback::new(move |key| set_row.set(key))
            usage
        />
        {move || match usage.get() {
            TableUsage::None(why) => Some(view! { <p class="subtle small" data-testid="usage-not-served">{why}</p> }),
            _ => None,
        }}
        </Transition>
    }
}
