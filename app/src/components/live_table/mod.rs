//! A table kept live over the tab's connection: kubectl's columns, sortable headers,
//! a text filter, ages that tick, and a badge saying how live it is. Its pieces:
//! [`rows`] (what arrives), [`window`] (what is rendered), [`selection`] (which row
//! is picked), [`cells`] (how a row looks); this module puts them together and
//! handles the keyboard.

mod cells;
mod rows;
mod selection;
mod window;

use leptos::prelude::*;

use crate::components::clock::ticking_clock;
use crate::components::live_badge::LiveBadge;
use crate::components::usage::TableUsage;
use crate::live::ViewState;
use cells::{FilterCell, HeaderCell, LiveRow, row_key};
use portico_core::resource::ResourceRef;
use portico_core::table::column_filters::ColumnFilter;
use portico_core::table::state::{SortKey, TableState};
use portico_core::table::wire::{Column, Row, TableQuery};
pub use rows::{LiveRows, use_live_rows};
use selection::{Selection, use_selection};
use window::{VirtualWindow, use_virtual_window};

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
    /// The selected row's key (`namespace/name`), e.g. from the URL, and where a new
    /// selection goes; kept inside the table when not given.
    #[prop(optional, into)]
    selected: Option<Signal<Option<String>>>,
    #[prop(optional)] on_select: Option<Callback<Option<String>>>,
    /// A Pod table's usage, shown in two columns after kubectl's once there are figures.
    #[prop(optional)]
    usage: Option<Memo<TableUsage>>,
    /// Filters on single columns; with `on_column_filter`, a row of fields under the
    /// headers sets them (called with the column and its text).
    #[prop(optional, into)]
    column_filters: Option<Signal<Vec<ColumnFilter>>>,
    #[prop(optional)] on_column_filter: Option<Callback<(String, String)>>,
    /// Called with an added column's name when its remove button is pressed.
    #[prop(optional)]
    on_remove_column: Option<Callback<String>>,
) -> impl IntoView {
    let column_filters = column_filters.unwrap_or_else(|| Signal::derive(Vec::new));
    let LiveRows {
        table,
        complete,
        status,
    } = use_live_rows(query);
    let now = ticking_clock();
    let selection = use_selection(selected, on_select);

    let columns = visible_columns(table, wide);
    let order = row_order(table, filter, sort, wide, column_filters, now);
    let total = Memo::new(move |_| table.with(TableState::len));
    let resource = Memo::new(move |_| query.with(TableQuery::resource));

    let window = use_virtual_window(Signal::derive(move || order.with(Vec::len)));
    let rows = window_rows(window, order, table);
    reveal_linked_row(selection.cursor, order, window);
    let on_key = on_table_key(window, order, table, resource, selection, link_rows);

    view! {
        <div class="table-toolbar">
            <LiveBadge view=status/>
            {row_count(order, total, complete)}
        </div>
        <div
            class="table-window"
            node_ref=window.scroller
            tabindex="0"
            role="grid"
            aria-label="Objects; arrow keys move the selection, Enter opens it, f filters"
            aria-rowcount=move || window.range.get().2
            // Until the columns arrive its rows are empty: say it is loading.
            aria-busy=move || columns.with(Vec::is_empty).to_string()
            on:scroll=move |_| window.scrolled()
            on:keydown=on_key
        >
            // The scroller is the grid (it scrolls, takes focus and the keys); the table
            // only lays it out, so its rows and cells say their grid roles themselves.
            <table class="grid live" data-testid="live-table" role="presentation">
                // No header row is a row until it has cells.
                <thead role=move || (!columns.with(Vec::is_empty)).then_some("rowgroup")>
                    {header_row(columns, sort, on_sort, on_remove_column, usage)}
                    {on_column_filter.map(|on_filter| filter_row(columns, column_filters, on_filter, usage))}
                </thead>
                <tbody role="rowgroup">
                    <tr class="spacer" aria-hidden="true" style=move || window.space_above()></tr>
                    {body_rows(rows, columns, now, resource, link_rows, usage, selection)}
                    <tr class="spacer" aria-hidden="true" style=move || window.space_below()></tr>
                </tbody>
            </table>
        </div>
        <Show when=move || status.with(|s| *s == ViewState::Live) && order.with(Vec::is_empty)>
            <p class="empty">
                {move || if total.get() == 0 { "No objects." } else { "No object matches the filter." }}
            </p>
        </Show>
    }
}

/// The table's filtered, sorted order: each row's uid and key (see [`row_key`]).
type RowOrder = Memo<Vec<(String, String)>>;

/// The columns shown (kubectl's, with the wide ones under `wide`), with their index in
/// the table.
fn visible_columns(table: RwSignal<TableState>, wide: Signal<bool>) -> Memo<Vec<(usize, Column)>> {
    Memo::new(move |_| {
        table.with(|t| {
            t.visible_columns(wide.get())
                .into_iter()
                .filter_map(|i| t.columns.get(i).cloned().map(|c| (i, c)))
                .collect::<Vec<(usize, Column)>>()
        })
    })
}

/// The whole filtered, sorted order, as row keys; only a window of it is rendered.
fn row_order(
    table: RwSignal<TableState>,
    filter: Signal<String>,
    sort: Signal<Option<SortKey>>,
    wide: Signal<bool>,
    column_filters: Signal<Vec<ColumnFilter>>,
    now: RwSignal<i64>,
) -> RowOrder {
    Memo::new(move |_| {
        let f = filter.get();
        let s = sort.get();
        let w = wide.get();
        let by_column = column_filters.get();
        table.with(|t| {
            t.view_filtered(&f, &by_column, s.as_ref(), w, now.get_untracked())
                .into_iter()
                .map(|r| (r.uid.clone(), row_key(r)))
                .collect::<Vec<(String, String)>>()
        })
    })
}

/// The rows of the rendered window, in order.
fn window_rows(
    window: VirtualWindow,
    order: RowOrder,
    table: RwSignal<TableState>,
) -> Memo<Vec<Row>> {
    Memo::new(move |_| {
        let (start, end, _) = window.range.get();
        order.with(|o| {
            table.with(|t| {
                o.get(start..end)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(|(uid, _)| t.row(uid).cloned())
                    .collect::<Vec<Row>>()
            })
        })
    })
}

/// Where the row keyed `key` is in the order.
fn position_of(order: RowOrder, key: &str) -> Option<usize> {
    order.with(|o| o.iter().position(|(_, k)| k == key))
}

/// A deep link names a row: scroll to it once it has arrived.
fn reveal_linked_row(cursor: RwSignal<Option<String>>, order: RowOrder, window: VirtualWindow) {
    let revealed = StoredValue::new(false);
    Effect::new(move |_| {
        if revealed.get_value() {
            return;
        }
        let Some(key) = cursor.get() else { return };
        if let Some(index) = position_of(order, &key) {
            revealed.set_value(true);
            window.reveal(index);
        }
    });
}

/// The grid's keys: a column filter's first (see [`column_filter_key`]), then the
/// arrows, Page Up and Down, Home and End choose a row, and Enter opens the one chosen
/// (when rows link to their pages).
fn on_table_key(
    window: VirtualWindow,
    order: RowOrder,
    table: RwSignal<TableState>,
    resource: Memo<ResourceRef>,
    selection: Selection,
    link_rows: bool,
) -> impl Fn(leptos::ev::KeyboardEvent) + 'static {
    let navigate = leptos_router::hooks::use_navigate();
    move |ev: leptos::ev::KeyboardEvent| {
        if column_filter_key(&ev, window) {
            return;
        }
        let len = order.with(Vec::len);
        if len == 0 {
            return;
        }
        let page = window.page_rows();
        let current = selection
            .cursor
            .get_untracked()
            .and_then(|k| position_of(order, &k));
        let next = match (ev.key().as_str(), current) {
            ("Enter", Some(i)) if link_rows => {
                if let Some(href) = row_href(order, table, resource, i) {
                    navigate(&href, Default::default());
                }
                return;
            }
            (key, _) => next_row(key, current, len, page),
        };
        let Some(next) = next else { return };
        ev.prevent_default();
        selection.select(order.with(|o| o.get(next).map(|(_, k)| k.clone())));
        window.reveal(next);
    }
}

/// Handles the keys of the column filters, saying whether the key was one: keys typed
/// into a filter are its text, Escape there goes back to the rows (where the arrow
/// keys choose again), and `f` goes to the first column's filter (Tab to the others).
fn column_filter_key(ev: &leptos::ev::KeyboardEvent, window: VirtualWindow) -> bool {
    if crate::keys::typing(ev) {
        if ev.key() == "Escape"
            && let Some(grid) = window.scroller.get_untracked()
        {
            ev.prevent_default();
            let _ = grid.focus();
        }
        return true;
    }
    if ev.key() == "f" && !(ev.ctrl_key() || ev.meta_key() || ev.alt_key()) {
        #[cfg(feature = "hydrate")]
        if let Some(grid) = window.scroller.get_untracked()
            && let Ok(Some(field)) = grid.query_selector("input.column-filter")
            && let Ok(field) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(field)
        {
            ev.prevent_default();
            let _ = field.focus();
        }
        return true;
    }
    false
}

/// The row a key moves the selection to among `len` rows (`page` of them a page), from
/// the row `current` (none chosen yet: the first or the last); `None` for other keys.
fn next_row(key: &str, current: Option<usize>, len: usize, page: usize) -> Option<usize> {
    let last = len.saturating_sub(1);
    Some(match (key, current) {
        ("ArrowDown", Some(i)) => (i + 1).min(last),
        ("ArrowUp", Some(i)) => i.saturating_sub(1),
        ("PageDown", Some(i)) => (i + page).min(last),
        ("PageUp", Some(i)) => i.saturating_sub(page),
        ("ArrowDown" | "PageDown" | "Home", None) | ("Home", Some(_)) => 0,
        ("ArrowUp" | "PageUp" | "End", None) | ("End", Some(_)) => last,
        _ => return None,
    })
}

/// The page of the row at `index` in the order.
fn row_href(
    order: RowOrder,
    table: RwSignal<TableState>,
    resource: Memo<ResourceRef>,
    index: usize,
) -> Option<String> {
    order.with(|o| {
        let (uid, _) = o.get(index)?;
        table.with(|t| {
            let r = t.row(uid)?;
            let resource = resource.get_untracked();
            Some(resource.object_path(r.namespace.as_deref(), &r.name))
        })
    })
}

/// How many objects are shown, of how many, and whether more are still loading.
fn row_count(order: RowOrder, total: Memo<usize>, complete: RwSignal<bool>) -> impl IntoView {
    view! {
        <span class="count" data-testid="row-count">
            {move || {
                let shown = order.with(Vec::len);
                let all = total.get();
                let noun = if all == 1 { "object" } else { "objects" };
                let counted = if shown == all { format!("{all} {noun}") } else { format!("{shown} of {all} {noun}") };
                if complete.get() { counted } else { format!("{counted} so far, loading…") }
            }}
        </span>
    }
}

/// The header row: a sortable header per column, then a Pod table's usage columns once
/// there are figures. No header row is a row until it has cells.
fn header_row(
    columns: Memo<Vec<(usize, Column)>>,
    sort: Signal<Option<SortKey>>,
    on_sort: Callback<String>,
    on_remove_column: Option<Callback<String>>,
    usage: Option<Memo<TableUsage>>,
) -> impl IntoView {
    view! {
        <tr role=move || (!columns.with(Vec::is_empty)).then_some("row")>
            <For each=move || columns.get() key=|(i, c)| (*i, c.name.clone(), c.path.clone(), c.problem.clone()) let:((_, column))>
                <HeaderCell column sort on_sort on_remove=on_remove_column/>
            </For>
            {usage.map(|usage| view! {
                <Show when=move || usage.with(TableUsage::has_figures)>
                    <th role="columnheader" data-extra="usage" title="In use now, from the metrics API (kubectl top pod)">"CPU(cores)"</th>
                    <th role="columnheader" data-extra="usage" title="In use now, from the metrics API (kubectl top pod)">"MEMORY(bytes)"</th>
                </Show>
            })}
        </tr>
    }
}

/// The row of fields under the headers, one per column, that filter on that column
/// (`on_filter` is called with the column and its text); shown once there are columns.
fn filter_row(
    columns: Memo<Vec<(usize, Column)>>,
    column_filters: Signal<Vec<ColumnFilter>>,
    on_filter: Callback<(String, String)>,
    usage: Option<Memo<TableUsage>>,
) -> impl IntoView {
    view! {
        <Show when=move || !columns.with(Vec::is_empty)>
            <tr role="row" class="column-filters" data-testid="column-filters">
                <For each=move || columns.get() key=|(i, c)| (*i, c.name.clone()) let:((_, column))>
                    <FilterCell
                        name=column.name.clone()
                        text=Signal::derive({
                            let name = column.name.clone();
                            move || column_filters.with(|all| {
                                all.iter().find(|f| f.column == name).map(|f| f.text.clone()).unwrap_or_default()
                            })
                        })
                        on_filter/>
                </For>
                {usage.map(|usage| view! {
                    <Show when=move || usage.with(TableUsage::has_figures)>
                        <td role="gridcell" data-extra="usage"></td>
                        <td role="gridcell" data-extra="usage"></td>
                    </Show>
                })}
            </tr>
        </Show>
    }
}

/// The rendered window's rows, each redrawn when its object or its cells change; a
/// click selects one.
fn body_rows(
    rows: Memo<Vec<Row>>,
    columns: Memo<Vec<(usize, Column)>>,
    now: RwSignal<i64>,
    resource: Memo<ResourceRef>,
    link_rows: bool,
    usage: Option<Memo<TableUsage>>,
    selection: Selection,
) -> impl IntoView {
    let cursor = selection.cursor;
    view! {
        <For
            each=move || rows.get()
            key=|row| (row.uid.clone(), row.resource_version.clone(), cells_digest(row))
            let:row
        >
            {
                let key = row_key(&row);
                let key_for_click = key.clone();
                let is_selected = Signal::derive(move || cursor.with(|s| s.as_deref() == Some(key.as_str())));
                view! {
                    <LiveRow row columns=columns.into() now=now.into() resource link_rows usage
                        selected=is_selected on_click=Callback::new(move |()| selection.select(Some(key_for_click.clone())))/>
                }
            }
        </For>
    }
}

/// A digest of a row's cells: one object at one version has other cells in another
/// table (columns added or removed, another API version), and is redrawn there.
fn cells_digest(row: &Row) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&row.cells)
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}
