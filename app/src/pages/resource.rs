//! One resource type's live table. The URL holds everything the view shows
//! (`?ns=&wide=&q=&sort=&selector=&columns=&f.<column>=`), so a view can be shared,
//! reloaded, starred and saved under a name.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{
    query_signal_with_options, use_location, use_navigate, use_params_map, use_query_map,
};

use crate::api::{fetch_permissions, list_namespaces, list_resources};
use crate::components::live_table::LiveTable;
use crate::components::namespace_picker::NamespaceControl;
use crate::components::star::StarButton;
use crate::components::usage::{TableUsage, use_table_usage};
use crate::error::BackendError;
use portico_core::payload::Permissions;
use portico_core::resource::{ResourceKind, ResourceRef};
use portico_core::table::added_columns::{self, AddedColumn};
use portico_core::table::column_filters::{self, ColumnFilter};
use portico_core::table::state::SortKey;
use portico_core::table::wire::TableQuery;
use portico_core::usage::UsageTarget;

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
    // Columns added after kubectl's (`kubectl get -o custom-columns`'s spec).
    let (columns, set_columns) = query_signal_with_options::<String>("columns", super::quiet());
    let (by_column, on_column_filter) = column_filters_in_url();
    let (added, set_added, on_remove_column) = added_columns_in_url(columns, set_columns);

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
    let kind = kind_of(resource, kinds);
    let namespaced = Signal::derive(move || kind.get().is_none_or(|k| k.namespaced));
    let query = table_query(resource, namespaced, ns, selector, columns);
    // A Pod table also shows what each Pod uses (kubectl top pod), asked as the person.
    let usage = use_table_usage(Signal::derive(move || {
        let r = resource.get();
        (r.group.is_empty() && r.plural == "pods").then(|| UsageTarget::Table {
            namespace: super::non_empty(ns.get()),
        })
    }));
    let sort_key = Signal::derive(move || sort.get().as_deref().and_then(SortKey::parse));
    let on_sort = Callback::new(move |column: String| {
        let next = SortKey::toggled(sort_key.get_untracked().as_ref(), column);
        set_sort.set(next.map(|k| k.to_param()));
    });
    let title = page_title(kind, resource);
    let (view_path, view_place, view_name) = saved_view_names(ns, resource, title);

    // The kind (title, scope, versions) comes from a resource: read it inside Transition.
    view! {
        <Transition fallback=|| view! { <p class="empty">"Loading…"</p> }>
        <Title text=title/>
        <div class="page-head">
            <div>
                <div class="title-row">
                    <h1 data-testid="resource-title">{title}</h1>
                    <StarButton path=view_path name=view_name place=view_place/>
                </div>
                <p class="subtle mono">{move || format!("{} · {}", resource.get().api_version(), resource.get().plural)}</p>
            </div>
            <div class="controls">
                <Show when=move || namespaced.get()>
                    <NamespaceControl namespaces ns=ns.into() set_ns=Callback::new(move |next| set_ns.set(next))/>
                </Show>
                {version_control(resource, kind)}
                {selector_control(selector, set_selector)}
                {wide_control(wide, set_wide)}
                <Transition fallback=|| ()>
                    {move || kind.get().filter(|k| !k.flags.builtin).map(|_| create_button(resource, ns, may))}
                </Transition>
                {filter_control(filter, set_filter)}
            </div>
        </div>
        <ViewTools added set_added view_path view_name view_place/>
        <LiveTable
            query
            column_filters=by_column
            on_column_filter
            on_remove_column
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

/// The filters on single columns the URL holds (`f.<column>=`), and the callback that
/// writes one there (called with the column and its text).
fn column_filters_in_url() -> (Memo<Vec<ColumnFilter>>, Callback<(String, String)>) {
    let query_map = use_query_map();
    let by_column = Memo::new(move |_| {
        query_map
            .with(|q| column_filters::from_params(q.latest_values().map(|(k, v)| (k.as_ref(), v))))
    });
    let write_query = super::use_query_writer();
    let on_column_filter = Callback::new(move |(column, text): (String, String)| {
        write_query(ColumnFilter::param(&column), super::non_empty(Some(text)));
    });
    (by_column, on_column_filter)
}

/// The columns added after kubectl's, read from the URL's `columns` (`spec`), the
/// callback that writes them there, and the one that removes a column by its name.
fn added_columns_in_url(
    spec: Memo<Option<String>>,
    set_spec: SignalSetter<Option<String>>,
) -> (
    Memo<Vec<AddedColumn>>,
    Callback<Vec<AddedColumn>>,
    Callback<String>,
) {
    let added = Memo::new(move |_| {
        spec.get()
            .map(|c| added_columns::parse(&c))
            .unwrap_or_default()
    });
    let set_added = Callback::new(move |next: Vec<AddedColumn>| {
        set_spec.set(super::non_empty(Some(added_columns::to_spec(&next))));
    });
    let on_remove_column = Callback::new(move |name: String| {
        let mut next = added.get_untracked();
        next.retain(|c| c.name != name);
        set_added.run(next);
    });
    (added, set_added, on_remove_column)
}

/// The kind shown, once the kinds have arrived (a resource: read it inside Transition).
fn kind_of(
    resource: Memo<ResourceRef>,
    kinds: Resource<Result<Vec<ResourceKind>, BackendError>>,
) -> Signal<Option<ResourceKind>> {
    Signal::derive(move || {
        let r = resource.get();
        kinds.get().and_then(Result::ok).and_then(|all| {
            all.into_iter()
                .find(|k| k.group == r.group && k.plural == r.plural)
        })
    })
}

/// What the table asks for: the resource, in the namespace chosen (for a namespaced
/// kind), with the label selector and the columns added.
fn table_query(
    resource: Memo<ResourceRef>,
    namespaced: Signal<bool>,
    ns: Memo<Option<String>>,
    selector: Memo<Option<String>>,
    columns: Memo<Option<String>>,
) -> Signal<TableQuery> {
    Signal::derive(move || {
        let r = resource.get();
        TableQuery {
            group: r.group,
            version: r.version,
            plural: r.plural,
            namespace: if namespaced.get() {
                super::non_empty(ns.get())
            } else {
                None
            },
            label_selector: super::non_empty(selector.get()),
            field_selector: None,
            columns: super::non_empty(columns.get()),
        }
    })
}

/// The page's title: the kind, or the resource's plural until the kind is known.
fn page_title(kind: Signal<Option<ResourceKind>>, resource: Memo<ResourceRef>) -> Signal<String> {
    Signal::derive(move || {
        kind.get()
            .map(|k| k.kind)
            .unwrap_or_else(|| resource.get().plural)
    })
}

/// This view as a starred or saved page: its path and query (not the row chosen), the
/// place it shows, and its name.
fn saved_view_names(
    ns: Memo<Option<String>>,
    resource: Memo<ResourceRef>,
    title: Signal<String>,
) -> (Signal<String>, Signal<String>, Signal<String>) {
    let location = use_location();
    let view_path = Signal::derive(move || {
        let mut query = location.query.get();
        query.remove("row");
        format!(
            "{}{}",
            crate::base::strip(&location.pathname.get()),
            query.to_query_string()
        )
    });
    let view_place = Signal::derive(move || match ns.get() {
        Some(n) => format!("{} · {n}", resource.get().plural),
        None => resource.get().plural,
    });
    let view_name = Signal::derive(move || match ns.get() {
        Some(n) => format!("{} in {n}", title.get()),
        None => title.get(),
    });
    (view_path, view_place, view_name)
}

/// The version picked among the kind's served ones; another opens its table.
fn version_control(
    resource: Memo<ResourceRef>,
    kind: Signal<Option<ResourceKind>>,
) -> impl IntoView {
    let navigate = use_navigate();
    view! {
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
    }
}

/// The label selector's field, applied when it changes.
fn selector_control(
    selector: Memo<Option<String>>,
    set_selector: SignalSetter<Option<String>>,
) -> impl IntoView {
    view! {
        <label class="control">
            "Label selector"
            <input
                type="text"
                class="selector"
                placeholder="app=web,tier!=db"
                aria-label="Label selector"
                prop:value=move || selector.get().unwrap_or_default()
                on:change:target=move |ev| set_selector.set(super::non_empty(Some(ev.target().value())))
            />
        </label>
    }
}

/// The Wide checkbox: kubectl's `-o wide` columns too.
fn wide_control(wide: Memo<Option<bool>>, set_wide: SignalSetter<Option<bool>>) -> impl IntoView {
    view! {
        <label class="control checkbox">
            <input
                type="checkbox"
                aria-label="Wide"
                prop:checked=move || wide.get().unwrap_or(false)
                on:change:target=move |ev| set_wide.set(ev.target().checked().then_some(true))
            />
            "Wide"
        </label>
    }
}

/// The create button of a kind that is not built in, or, where the person may not
/// create these here, a disabled one and a link to why.
fn create_button(
    resource: Memo<ResourceRef>,
    ns: Memo<Option<String>>,
    may: Resource<Result<Permissions, BackendError>>,
) -> AnyView {
    let href = format!(
        "{}{}/new{}",
        crate::base::get(),
        resource.get().page_path(),
        ns.get().map(|n| format!("?ns={n}")).unwrap_or_default()
    );
    let allowed = may.get().and_then(Result::ok).is_none_or(|p| p.create);
    if allowed {
        view! { <a class="button primary" href=href data-testid="create-link">"Create"</a> }
            .into_any()
    } else {
        view! {
            <span class="button primary disabled" data-testid="create-link" aria-disabled="true"
                title="Your Kubernetes permissions do not allow creating these here.">"Create"</span>
            <a class="small access-link" data-testid="create-why" href=crate::base::url(&portico_core::access::page_path(ns.get().as_deref()))>"Why?"</a>
        }.into_any()
    }
}

/// The field that filters the rows by their text, applied as it is typed.
fn filter_control(
    filter: Memo<Option<String>>,
    set_filter: SignalSetter<Option<String>>,
) -> impl IntoView {
    view! {
        <input
            class="filter"
            type="search"
            placeholder="Filter rows…"
            aria-label="Filter rows"
            prop:value=move || filter.get().unwrap_or_default()
            on:input:target=move |ev| set_filter.set(super::non_empty(Some(ev.target().value())))
        />
    }
}

/// Under the page's head: adding a column by JSONPath, and saving the view under a
/// name (kept in this browser, see `saved`).
#[component]
fn ViewTools(
    added: Memo<Vec<AddedColumn>>,
    set_added: Callback<Vec<AddedColumn>>,
    view_path: Signal<String>,
    view_name: Signal<String>,
    view_place: Signal<String>,
) -> impl IntoView {
    let adding = RwSignal::new(false);
    let name = RwSignal::new(String::new());
    let path = RwSignal::new(String::new());
    let problem = RwSignal::new(None::<String>);
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let mut next = added.get_untracked();
        let existing: Vec<&str> = next.iter().map(|c| c.name.as_str()).collect();
        let why = added_columns::name_problem(&name.get_untracked(), &existing)
            .or_else(|| {
                (next.len() >= added_columns::MAX_ADDED_COLUMNS).then(|| {
                    format!(
                        "A table adds at most {} columns.",
                        added_columns::MAX_ADDED_COLUMNS
                    )
                })
            })
            .or_else(|| {
                path.with_untracked(|p| p.trim().is_empty())
                    .then(|| "A column needs a JSONPath, such as .status.phase".to_string())
            });
        if let Some(why) = why {
            problem.set(Some(why));
            return;
        }
        next.push(AddedColumn {
            name: name.get_untracked().trim().to_string(),
            path: path.get_untracked().trim().to_string(),
        });
        // The server refuses the whole table past the bounds: say it here instead.
        if !added_columns::is_within_bounds(&added_columns::to_spec(&next)) {
            problem.set(Some(format!(
                "The added columns would be longer than {} characters: shorten a path or remove a column.",
                added_columns::MAX_SPEC_LEN
            )));
            return;
        }
        set_added.run(next);
        name.set(String::new());
        path.set(String::new());
        problem.set(None);
        adding.set(false);
    };
    let saving = RwSignal::new(false);
    let saved_name = RwSignal::new(String::new());
    let saved_note = RwSignal::new(None::<String>);
    let save = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let chosen = saved_name.get_untracked();
        let chosen = chosen.trim();
        let chosen = if chosen.is_empty() {
            view_name.get_untracked()
        } else {
            chosen.to_string()
        };
        let path = view_path.get_untracked();
        crate::saved::save(crate::saved::Saved {
            name: chosen.clone(),
            place: view_place.get_untracked(),
            path: path.clone(),
            starred: crate::saved::find(&path).is_some_and(|s| s.starred),
            named: true,
        });
        saved_note.set(Some(format!(
            "Saved as “{chosen}”: on the home page and in Go to…"
        )));
        saving.set(false);
    };
    view! {
        <div class="view-tools">
            <button type="button" class="small-btn" data-testid="add-column-open" aria-expanded=move || adding.get().to_string()
                on:click=move |_| adding.update(|a| *a = !*a)>"Add column"</button>
            <button type="button" class="small-btn" data-testid="save-view-open" aria-expanded=move || saving.get().to_string()
                on:click=move |_| {
                    saved_name.set(view_name.get_untracked());
                    saving.update(|s| *s = !*s);
                }>"Save view"</button>
            <span class="subtle small" role="status" data-testid="saved-note">{move || saved_note.get()}</span>
        </div>
        <Show when=move || adding.get()>
            <form class="add-column" data-testid="add-column" on:submit=add>
                <label class="control">
                    "Column name"
                    <input type="text" data-testid="add-column-name" placeholder="IMAGE"
                        prop:value=move || name.get() on:input:target=move |ev| name.set(ev.target().value())/>
                </label>
                <label class="control">
                    "JSONPath (as kubectl get -o custom-columns takes it)"
                    <input type="text" class="path" data-testid="add-column-path" placeholder=".spec.containers[*].image"
                        prop:value=move || path.get() on:input:target=move |ev| path.set(ev.target().value())/>
                </label>
                <button type="submit" class="button primary" data-testid="add-column-submit">"Add"</button>
                {move || problem.get().map(|why| view! { <p class="field-error" role="alert" data-testid="add-column-problem">{why}</p> })}
            </form>
        </Show>
        <Show when=move || saving.get()>
            <form class="add-column" data-testid="save-view" on:submit=save>
                <label class="control">
                    "Name of this view"
                    <input type="text" data-testid="save-view-name"
                        prop:value=move || saved_name.get() on:input:target=move |ev| saved_name.set(ev.target().value())/>
                </label>
                <button type="submit" class="button primary" data-testid="save-view-submit">"Save"</button>
                <span class="subtle small">"Kept in this browser only."</span>
            </form>
        </Show>
    }
}
