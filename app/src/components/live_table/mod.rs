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
use portico_core::table::column_filters::ColumnFilter;
use portico_core::table::state::{SortKey, TableState};
use portico_core::table::wire::{Column, Row, TableQuery};
pub use rows::{LiveRows, use_live_rows};
use selection::use_selection;
use window::use_virtual_window;

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
    let cursor = selection.cursor;

    let columns = Memo::new(move |_| {
        table.with(|t| {
            t.visible_columns(wide.get())
                .into_iter()
                .filter_map(|i| t.columns.get(i).cloned().map(|c| (i, c)))
                .collect::<Vec<(usize, Column)>>()
        })
    });
    // The whole filtered, sorted order, as row keys; only a window of it is rendered.
    let order = Memo::new(move |_| {
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
    });
    let total = Memo::new(move |_| table.with(TableState::len));
    let resource = Memo::new(move |_| query.with(TableQuery::resource));

    let window = use_virtual_window(Signal::derive(move || order.with(Vec::len)));
    let rows = Memo::new(move |_| {
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
    });
    let position_of = move |key: &str| order.with(|o| o.iter().position(|(_, k)| k == key));

    // A deep link names a row: scroll to it once it has arrived.
    let revealed = StoredValue::new(false);
    Effect::new(move |_| {
        if revealed.get_value() {
            return;
        }
        let Some(key) = cursor.get() else { return };
        if let Some(index) = position_of(&key) {
            revealed.set_value(true);
            window.reveal(index);
        }
    });

    let navigate = leptos_router::hooks::use_navigate();
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        // Keys typed into a column's filter are its text; Escape goes back to the
        // rows, where the arrow keys choose again.
        if crate::keys::typing(&ev) {
            if ev.key() == "Escape"
                && let Some(grid) = window.scroller.get_untracked()
            {
                ev.prevent_default();
                let _ = grid.focus();
            }
            return;
        }
        // `f` goes to the first column's filter (Tab to the others).
        if ev.key() == "f" && !(ev.ctrl_key() || ev.meta_key() || ev.alt_key()) {
            #[cfg(feature = "hydrate")]
            if let Some(grid) = window.scroller.get_untracked()
                && let Ok(Some(field)) = grid.query_selector("input.column-filter")
                && let Ok(field) = wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(field)
            {
                ev.prevent_default();
                let _ = field.focus();
            }
            return;
        }
        let len = order.with(Vec::len);
        if len == 0 {
            return;
        }
        let page = window.page_rows();
        let current = cursor.get_untracked().and_then(|k| position_of(&k));
        let next = match (ev.key().as_str(), current) {
            ("ArrowDown", Some(i)) => (i + 1).min(len - 1),
            ("ArrowUp", Some(i)) => i.saturating_sub(1),
            ("PageDown", Some(i)) => (i + page).min(len - 1),
            ("PageUp", Some(i)) => i.saturating_sub(page),
            ("ArrowDown" | "PageDown" | "Home", None) | ("Home", Some(_)) => 0,
            ("ArrowUp" | "PageUp" | "End", None) | ("End", Some(_)) => len - 1,
            ("Enter", Some(i)) if link_rows => {
                let href = order.with(|o| {
                    let (uid, _) = o.get(i)?;
                    table.with(|t| {
                        let r = t.row(uid)?;
                        let resource = resource.get_untracked();
                        Some(resource.object_path(r.namespace.as_deref(), &r.name))
                    })
                });
                if let Some(href) = href {
                    navigate(&href, Default::default());
                }
                return;
            }
            _ => return,
        };
        ev.prevent_default();
        selection.select(order.with(|o| o.get(next).map(|(_, k)| k.clone())));
        window.reveal(next);
    };

    view! {
        <div class="table-toolbar">
            <LiveBadge view=status/>
            <span class="count" data-testid="row-count">
                {move || {
                    let shown = order.with(Vec::len);
                    let all = total.get();
                    let noun = if all == 1 { "object" } else { "objects" };
                    let counted = if shown == all { format!("{all} {noun}") } else { format!("{shown} of {all} {noun}") };
                    if complete.get() { counted } else { format!("{counted} so far, loading…") }
                }}
            </span>
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
                    {on_column_filter.map(|on_filter| view! {
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
                    })}
                </thead>
                <tbody role="rowgroup">
                    <tr class="spacer" aria-hidden="true" style=move || window.space_above()></tr>
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
