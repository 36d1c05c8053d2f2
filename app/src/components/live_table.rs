//! A table kept live by the server's SSE stream: kubectl's columns, sortable headers,
//! a text filter, ages that tick.

use leptos::prelude::*;

use crate::table::format::cell_text;
use crate::table::model::{Column, ResourceRef, Row, TableQuery};
use crate::table::state::{SortKey, TableState};

/// Where the stream stands, for the status badge.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveStatus {
    Connecting,
    Live,
    Reconnecting,
    Problem(String),
}

/// Seconds since the epoch, on either side.
pub fn now_seconds() -> i64 {
    #[cfg(feature = "hydrate")]
    {
        (js_sys::Date::now() / 1000.0) as i64
    }
    #[cfg(not(feature = "hydrate"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0)
    }
}

#[component]
pub fn LiveTable(
    query: Signal<TableQuery>,
    #[prop(into)] wide: Signal<bool>,
    #[prop(into)] filter: Signal<String>,
    #[prop(into)] sort: Signal<Option<SortKey>>,
    /// Called with a column name when its header is clicked.
    on_sort: Callback<String>,
    /// Whether rows link to their detail pages.
    #[prop(default = true)]
    link_rows: bool,
) -> impl IntoView {
    let table = RwSignal::new(TableState::default());
    let status = RwSignal::new(LiveStatus::Connecting);
    let now = RwSignal::new(now_seconds());

    #[cfg(feature = "hydrate")]
    stream::connect(query, table, status, now);

    let columns = Memo::new(move |_| {
        table.with(|t| {
            t.visible_columns(wide.get())
                .into_iter()
                .filter_map(|i| t.columns.get(i).cloned().map(|c| (i, c)))
                .collect::<Vec<(usize, Column)>>()
        })
    });
    let rows = Memo::new(move |_| {
        let f = filter.get();
        let s = sort.get();
        let w = wide.get();
        table.with(|t| {
            t.view(&f, s.as_ref(), w, now.get_untracked())
                .into_iter()
                .cloned()
                .collect::<Vec<Row>>()
        })
    });
    let total = Memo::new(move |_| table.with(TableState::len));
    let resource = Memo::new(move |_| query.with(TableQuery::resource));

    view! {
        <div class="table-toolbar">
            <StatusBadge status/>
            <span class="count" data-testid="row-count">
                {move || {
                    let shown = rows.with(Vec::len);
                    let all = total.get();
                    let noun = if all == 1 { "object" } else { "objects" };
                    if shown == all { format!("{all} {noun}") } else { format!("{shown} of {all} {noun}") }
                }}
            </span>
        </div>
        <table class="grid live" data-testid="live-table">
            <thead>
                <tr>
                    <For each=move || columns.get() key=|(i, c)| (*i, c.name.clone()) let:((_, column))>
                        <HeaderCell column sort on_sort/>
                    </For>
                </tr>
            </thead>
            <tbody>
                <For
                    each=move || rows.get()
                    key=|row| (row.uid.clone(), row.resource_version.clone())
                    let:row
                >
                    <LiveRow row columns=columns.into() now=now.into() resource link_rows/>
                </For>
            </tbody>
        </table>
        <Show when=move || status.with(|s| *s == LiveStatus::Live) && rows.with(Vec::is_empty)>
            <p class="empty">
                {move || if total.get() == 0 { "No objects." } else { "No object matches the filter." }}
            </p>
        </Show>
    }
}

#[component]
fn StatusBadge(status: RwSignal<LiveStatus>) -> impl IntoView {
    view! {
        <span
            class=move || match status.get() {
                LiveStatus::Live => "badge live",
                LiveStatus::Problem(_) => "badge problem",
                _ => "badge pending",
            }
            data-testid="live-status"
        >
            {move || match status.get() {
                LiveStatus::Connecting => "Connecting…".to_string(),
                LiveStatus::Live => "Live".to_string(),
                LiveStatus::Reconnecting => "Reconnecting…".to_string(),
                LiveStatus::Problem(p) => p,
            }}
        </span>
    }
}

#[component]
fn HeaderCell(
    column: Column,
    sort: Signal<Option<SortKey>>,
    on_sort: Callback<String>,
) -> impl IntoView {
    let name = column.name.clone();
    let name_for_click = name.clone();
    let name_for_mark = name.clone();
    let mark = move || match sort.get() {
        Some(k) if k.column == name_for_mark => {
            if k.descending {
                " ▼"
            } else {
                " ▲"
            }
        }
        _ => "",
    };
    let title = if column.description.is_empty() {
        column.name.clone()
    } else {
        column.description.clone()
    };
    view! {
        <th class="sortable" title=title data-column=name.clone() on:click=move |_| on_sort.run(name_for_click.clone())>
            {name.to_uppercase()}
            <span class="sort-mark">{mark}</span>
        </th>
    }
}

#[component]
fn LiveRow(
    row: Row,
    columns: Signal<Vec<(usize, Column)>>,
    now: Signal<i64>,
    resource: Memo<ResourceRef>,
    link_rows: bool,
) -> impl IntoView {
    let row = StoredValue::new(row);
    let href = move || {
        row.with_value(|r| {
            format!(
                "{}{}/{}/{}",
                crate::base::get(),
                resource.get().page_path(),
                r.namespace.as_deref().unwrap_or("_"),
                r.name
            )
        })
    };
    let cells = move || {
        columns
            .get()
            .into_iter()
            .map(|(i, column)| {
                let value =
                    row.with_value(|r| r.cells.get(i).cloned().unwrap_or(serde_json::Value::Null));
                let is_name = column.format == "name";
                let is_date = column.kind == "date";
                let text =
                    move || cell_text(&value, &column.kind, if is_date { now.get() } else { 0 });
                if is_name && link_rows {
                    view! { <td class="name"><a href=href>{text}</a></td> }.into_any()
                } else {
                    view! { <td>{text}</td> }.into_any()
                }
            })
            .collect_view()
    };
    let deleting = row.with_value(|r| r.deleting);
    view! {
        <tr
            class:deleting=deleting
            data-uid=row.with_value(|r| r.uid.clone())
            data-name=row.with_value(|r| r.name.clone())
        >
            {cells}
        </tr>
    }
}

#[cfg(feature = "hydrate")]
mod stream {
    //! The browser end of the SSE stream.

    use leptos::prelude::*;
    use send_wrapper::SendWrapper;

    use crate::live::ServerEvents;

    use super::{LiveStatus, now_seconds};
    use crate::table::model::{TableDelta, TableQuery, TableSnapshot, sse_event};
    use crate::table::state::TableState;

    fn open(
        query: &TableQuery,
        table: RwSignal<TableState>,
        status: RwSignal<LiveStatus>,
    ) -> Option<ServerEvents> {
        let url = crate::base::url(&format!("/api/live/table?{}", query.to_query_string()));
        let mut source = ServerEvents::open(&url)?;
        source.on(sse_event::SNAPSHOT, move |text| {
            if let Ok(s) = serde_json::from_str::<TableSnapshot>(&text) {
                table.set(TableState::from_snapshot(s));
                status.set(LiveStatus::Live);
            }
        });
        source.on(sse_event::DELTA, move |text| {
            if let Ok(d) = serde_json::from_str::<TableDelta>(&text) {
                table.update(|t| t.apply(d));
            }
        });
        source.on(sse_event::PROBLEM, move |text| {
            status.set(LiveStatus::Problem(text));
        });
        source.on_error(move |closed| {
            // A refused connection (403, 401) closes for good; anything else
            // reconnects by itself and the server starts again with a snapshot.
            if closed {
                status.set(LiveStatus::Problem(
                    "Portico refused this live view: you may not watch this resource here, or your sign-in has expired."
                        .into(),
                ));
            } else if !matches!(status.get_untracked(), LiveStatus::Problem(_)) {
                status.set(LiveStatus::Reconnecting);
            }
        });
        Some(source)
    }

    pub fn connect(
        query: Signal<TableQuery>,
        table: RwSignal<TableState>,
        status: RwSignal<LiveStatus>,
        now: RwSignal<i64>,
    ) {
        let connection = StoredValue::new(SendWrapper::new(None::<ServerEvents>));
        Effect::new(move |_| {
            let q = query.get();
            status.set(LiveStatus::Connecting);
            let next = open(&q, table, status);
            connection.update_value(|c| **c = next);
        });
        let ticker = set_interval_with_handle(
            move || now.set(now_seconds()),
            std::time::Duration::from_secs(1),
        )
        .ok();
        on_cleanup(move || {
            connection.update_value(|c| **c = None);
            if let Some(t) = ticker {
                t.clear();
            }
        });
    }
}
