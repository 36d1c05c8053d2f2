//! Several kinds in one live table (`/many?kinds=pods,deployments.apps`), and
//! "everything not Ready" (`/many?not_ready=true`: every kind whose objects say
//! whether they are ready that the person may list). Each kind is its own live feed,
//! as its own page would follow it, with the `Ready` condition read by added columns
//! (`portico_core::readiness`); the rows are merged here with a Kind column.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::query_signal_with_options;

use crate::api::{list_namespaces, list_resources};
use crate::base::url;
use crate::components::clock::ticking_clock;
use crate::components::live_badge::LiveBadge;
use crate::components::live_table::{LiveRows, use_live_rows};
use crate::components::namespace_picker::NamespaceControl;
use portico_core::readiness::{
    self, MAX_KINDS, READY_COLUMNS, Readiness, kind_name, kinds_with_readiness, resolve_kinds,
};
use portico_core::resource::ResourceKind;
use portico_core::table::format::cell_text;
use portico_core::table::wire::TableQuery;

/// Rows drawn at most; the rest are counted (narrow the namespace or the filter).
const ROWS_SHOWN: usize = 1_000;

/// One row of the merged table.
#[derive(Debug, Clone, PartialEq)]
struct MergedRow {
    kind: String,
    path: String,
    namespace: Option<String>,
    name: String,
    readiness: Readiness,
    /// kubectl's STATUS cell, where the kind prints one.
    status: String,
    created: Option<String>,
}

/// The kinds looked at: named, or those with readiness; those left out, said.
#[derive(Debug, Clone, Default, PartialEq)]
struct Chosen {
    kinds: Vec<ResourceKind>,
    unknown: Vec<String>,
    more: usize,
}

impl Chosen {
    /// The kinds named in `spec`, as kubectl get takes them; the names that are no
    /// kind here are said.
    fn named(spec: &str, all: &[ResourceKind]) -> Self {
        let (kinds, unknown) = resolve_kinds(spec, all);
        Self {
            kinds,
            unknown,
            more: 0,
        }
    }

    /// Every kind whose objects say whether they are ready (only namespaced ones with
    /// `namespaced_only`), up to [`MAX_KINDS`]; how many more there are is said.
    fn with_readiness(all: &[ResourceKind], namespaced_only: bool) -> Self {
        let (kinds, more) = kinds_with_readiness(all, namespaced_only);
        Self {
            kinds,
            unknown: Vec::new(),
            more,
        }
    }
}

#[component]
pub fn ManyPage() -> impl IntoView {
    let (kinds_param, set_kinds) = query_signal_with_options::<String>("kinds", super::quiet());
    let (not_ready, set_not_ready) = query_signal_with_options::<bool>("not_ready", super::quiet());
    let (ns, set_ns) = query_signal_with_options::<String>("ns", super::quiet());
    let (filter, set_filter) = query_signal_with_options::<String>("q", super::quiet());
    let all_kinds = Resource::new(|| (), |_| list_resources());
    let namespaces = Resource::new(|| (), |_| list_namespaces());
    let now = ticking_clock();

    let chosen = Memo::new(move |_| {
        let all = all_kinds.get().and_then(Result::ok).unwrap_or_default();
        let namespace = super::non_empty(ns.get());
        match super::non_empty(kinds_param.get()) {
            Some(spec) => Chosen::named(&spec, &all),
            None if not_ready.get().unwrap_or(false) => {
                Chosen::with_readiness(&all, namespace.is_some())
            }
            None => Chosen::default(),
        }
    });
    // Each kind's feed, as its component registers it.
    let feeds = RwSignal::new(Vec::<(ResourceKind, LiveRows)>::new());
    let merged = Memo::new(move |_| {
        let words = filter_words(filter.get());
        let only_not_ready = not_ready.get().unwrap_or(false);
        feeds.with(|all| merged_rows(all, &words, only_not_ready))
    });
    let title = move || {
        if super::non_empty(kinds_param.get()).is_none() && not_ready.get().unwrap_or(false) {
            "Everything not Ready"
        } else {
            "Several kinds"
        }
    };

    view! {
        <Title text=Signal::derive(move || title().to_string())/>
        <div class="page-head">
            <div>
                <h1 data-testid="many-title">{title}</h1>
                <p class="subtle">"Several kinds in one live table, as you may list them."</p>
            </div>
            <div class="controls">
                <NamespaceControl namespaces ns=ns.into() set_ns=Callback::new(move |next| set_ns.set(next))/>
                <label class="control">
                    "Kinds (as kubectl get takes them)"
                    <input type="text" class="selector" data-testid="many-kinds" aria-label="Kinds"
                        placeholder="pods,deployments.apps"
                        prop:value=move || kinds_param.get().unwrap_or_default()
                        on:change:target=move |ev| set_kinds.set(super::non_empty(Some(ev.target().value())))/>
                </label>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="many-not-ready" aria-label="Only not Ready"
                        prop:checked=move || not_ready.get().unwrap_or(false)
                        on:change:target=move |ev| set_not_ready.set(ev.target().checked().then_some(true))/>
                    "Only not Ready"
                </label>
                <input class="filter" type="search" placeholder="Filter rows…" aria-label="Filter rows"
                    prop:value=move || filter.get().unwrap_or_default()
                    on:input:target=move |ev| set_filter.set(super::non_empty(Some(ev.target().value())))/>
            </div>
        </div>
        <For each=move || chosen.get().kinds key=kind_name let:kind>
            <KindFeed kind namespace=Signal::derive(move || super::non_empty(ns.get())) feeds/>
        </For>
        <p class="count" data-testid="many-count">
            {move || count_text(merged.with(Vec::len), feeds.with(Vec::len))}
        </p>
        <Show when=move || chosen.with(|c| c.kinds.is_empty())>
            <p class="empty">"Name kinds above (pods,deployments.apps), or tick Only not Ready to look at every kind that says whether it is ready."</p>
        </Show>
        {merged_table(merged, now)}
        {kinds_looked_at(feeds, chosen)}
    }
}

/// The row filter's words, lower-cased: a row is shown when its text holds them all.
fn filter_words(filter: Option<String>) -> Vec<String> {
    filter
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect()
}

/// The rows of every kind's feed that hold all the filter's `words` (and, with
/// `only_not_ready`, say they are not Ready), sorted by kind, namespace and name.
/// Reads each feed's table tracked: called from the merging memo.
fn merged_rows(
    feeds: &[(ResourceKind, LiveRows)],
    words: &[String],
    only_not_ready: bool,
) -> Vec<MergedRow> {
    let mut rows = Vec::new();
    for (kind, live) in feeds {
        let resource = kind.resource(None);
        live.table.with(|table| {
            let status_at = table.columns.iter().position(|c| c.name == "Status");
            for row in table.rows() {
                let readiness = readiness::of_row(&table.columns, row);
                if only_not_ready && !matches!(readiness, Readiness::NotReady(_)) {
                    continue;
                }
                let status = status_at
                    .and_then(|i| row.cells.get(i))
                    .map(|c| cell_text(c, "string", 0))
                    .unwrap_or_default();
                let text = format!(
                    "{} {} {} {status} {}",
                    kind.kind,
                    row.namespace.as_deref().unwrap_or(""),
                    row.name,
                    match &readiness {
                        Readiness::NotReady(why) => why.as_str(),
                        _ => "",
                    }
                )
                .to_lowercase();
                if !words.iter().all(|w| text.contains(w.as_str())) {
                    continue;
                }
                rows.push(MergedRow {
                    kind: kind.kind.clone(),
                    path: resource.object_path(row.namespace.as_deref(), &row.name),
                    namespace: row.namespace.clone(),
                    name: row.name.clone(),
                    readiness,
                    status,
                    created: row.created.clone(),
                });
            }
        });
    }
    rows.sort_by(|a, b| (&a.kind, &a.namespace, &a.name).cmp(&(&b.kind, &b.namespace, &b.name)));
    rows
}

/// "3 objects in 2 kinds", singular where one.
fn count_text(objects: usize, kinds: usize) -> String {
    format!(
        "{objects} {} in {kinds} {}",
        if objects == 1 { "object" } else { "objects" },
        if kinds == 1 { "kind" } else { "kinds" }
    )
}

/// The merged table (its first [`ROWS_SHOWN`] rows, ages counting up with `now`),
/// and how many rows more there are.
fn merged_table(merged: Memo<Vec<MergedRow>>, now: RwSignal<i64>) -> impl IntoView {
    view! {
        <table class="grid live" data-testid="many-table">
            <thead>
                <tr>
                    <th scope="col">"KIND"</th>
                    <th scope="col">"NAMESPACE"</th>
                    <th scope="col">"NAME"</th>
                    <th scope="col">"READY"</th>
                    <th scope="col">"STATUS"</th>
                    <th scope="col">"AGE"</th>
                </tr>
            </thead>
            <tbody>
                {move || merged.with(|rows| rows.iter().take(ROWS_SHOWN).map(|row| {
                    let (ready, why) = match &row.readiness {
                        Readiness::Ready => ("Ready", String::new()),
                        Readiness::NotReady(why) => ("Not ready", why.clone()),
                        Readiness::Unknown => ("—", String::new()),
                    };
                    let status = if why.is_empty() { row.status.clone() } else { why };
                    let created = row.created.clone();
                    view! {
                        <tr class="row" data-kind=row.kind.clone() data-name=row.name.clone() class:not-ready=matches!(row.readiness, Readiness::NotReady(_))>
                            <td class="kind">{row.kind.clone()}</td>
                            <td>{row.namespace.clone().unwrap_or_default()}</td>
                            <td class="name"><a href=url(&row.path)>{row.name.clone()}</a></td>
                            <td data-testid="many-ready">{ready}</td>
                            <td title=status.clone()>{status.clone()}</td>
                            <td>{move || created.as_ref().map(|c| cell_text(&serde_json::Value::String(c.clone()), "date", now.get())).unwrap_or_default()}</td>
                        </tr>
                    }
                }).collect_view())}
            </tbody>
        </table>
        {move || {
            let n = merged.with(Vec::len);
            (n > ROWS_SHOWN).then(|| view! { <p class="subtle small">{format!("and {} more: narrow the namespace or the filter", n - ROWS_SHOWN)}</p> })
        }}
    }
}

/// The kinds looked at, each with its feed's state, and those left out (no kind
/// here, or beyond the [`MAX_KINDS`] a view follows).
fn kinds_looked_at(
    feeds: RwSignal<Vec<(ResourceKind, LiveRows)>>,
    chosen: Memo<Chosen>,
) -> impl IntoView {
    view! {
        <section class="panel" data-testid="many-kinds-status">
            <h2>"Kinds looked at"</h2>
            <ul class="kind-chips">
                <For each=move || feeds.get() key=|(k, _)| kind_name(k) let:((kind, live))>
                    <li data-kind=kind.kind.clone()>
                        <a href=url(&kind.resource(None).page_path())>{kind_name(&kind)}</a>" "
                        <LiveBadge view=live.status testid="kind-live-status"/>
                    </li>
                </For>
            </ul>
            {move || chosen.with(|c| {
                let mut said = Vec::new();
                if !c.unknown.is_empty() {
                    said.push(format!("Not a kind here: {}.", c.unknown.join(", ")));
                }
                if c.more > 0 {
                    said.push(format!("{} more kinds say whether they are ready; a view looks at {MAX_KINDS} at most: name them above.", c.more));
                }
                (!said.is_empty()).then(|| view! { <p class="notice" data-testid="many-left-out">{said.join(" ")}</p> })
            })}
        </section>
    }
}

/// One kind's live feed (invisible): registers its rows with the page while it lives.
#[component]
fn KindFeed(
    kind: ResourceKind,
    namespace: Signal<Option<String>>,
    feeds: RwSignal<Vec<(ResourceKind, LiveRows)>>,
) -> impl IntoView {
    let resource = kind.resource(None);
    let namespaced = kind.namespaced;
    let query = Signal::derive(move || TableQuery {
        group: resource.group.clone(),
        version: resource.version.clone(),
        plural: resource.plural.clone(),
        namespace: namespace.get().filter(|_| namespaced),
        label_selector: None,
        field_selector: None,
        columns: Some(READY_COLUMNS.to_string()),
    });
    let live = use_live_rows(query);
    let name = kind_name(&kind);
    feeds.update(|all| all.push((kind, live)));
    on_cleanup(move || {
        let _ = feeds.try_update(|all| all.retain(|(k, _)| kind_name(k) != name));
    });
}
