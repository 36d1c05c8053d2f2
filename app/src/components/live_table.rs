//! A table kept live over the tab's connection: kubectl's columns, sortable headers,
//! a text filter, ages that tick, and a badge saying how live it is.

use leptos::prelude::*;

use crate::components::live_badge::LiveBadge;
use crate::live::protocol::{ServerMessage, Topic};
use crate::live::{ViewState, follow_signal};
use crate::table::format::cell_text;
use crate::table::model::{Column, ResourceRef, Row, TableQuery};
use crate::table::state::{SortKey, TableState};

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
    let status = RwSignal::new(ViewState::Waiting);
    let now = ticking_clock();
    follow_signal(
        Signal::derive(move || Topic::Table { query: query.get() }),
        move |message| {
            status.update(|s| *s = s.after(&message));
            match message {
                ServerMessage::Snapshot { table: t, .. } => table.set(TableState::from_snapshot(t)),
                ServerMessage::Delta { delta, .. } => table.update(|t| t.apply(delta)),
                _ => {}
            }
        },
    );

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
            <LiveBadge view=status/>
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
        <Show when=move || status.with(|s| *s == ViewState::Live) && rows.with(Vec::is_empty)>
            <p class="empty">
                {move || if total.get() == 0 { "No objects." } else { "No object matches the filter." }}
            </p>
        </Show>
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

/// The current time in seconds, ticking every second while the calling component
/// lives (ages in cells count up by themselves).
pub fn ticking_clock() -> RwSignal<i64> {
    let now = RwSignal::new(now_seconds());
    #[cfg(feature = "hydrate")]
    {
        let ticker = set_interval_with_handle(
            move || now.set(now_seconds()),
            std::time::Duration::from_secs(1),
        )
        .ok();
        on_cleanup(move || {
            if let Some(t) = ticker {
                t.clear();
            }
        });
    }
    now
}
