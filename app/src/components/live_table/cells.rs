//! A live table's header cells and rows.

use leptos::prelude::*;

use crate::components::usage::TableUsage;
use portico_core::resource::ResourceRef;
use portico_core::table::format::cell_text;
use portico_core::table::state::SortKey;
use portico_core::table::wire::{Column, Row};

/// The key a row is selected and deep-linked by: `namespace/name`, or `name`.
pub fn row_key(row: &Row) -> String {
    match &row.namespace {
        Some(ns) => format!("{ns}/{}", row.name),
        None => row.name.clone(),
    }
}

#[component]
pub fn HeaderCell(
    column: Column,
    sort: Signal<Option<SortKey>>,
    on_sort: Callback<String>,
    /// Offered on a column the person added: removes it.
    on_remove: Option<Callback<String>>,
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
    let added = column.path.is_some();
    let remove = on_remove.filter(|_| added).map(|on_remove| {
        let name = name.clone();
        view! {
            <button type="button" class="remove-column" aria-label=format!("Remove column {name}")
                data-testid="remove-column"
                on:click=move |ev| {
                    // Not a click on the header: it would sort.
                    ev.stop_propagation();
                    on_remove.run(name.clone());
                }>"✕"</button>
        }
    });
    let problem = column.problem.clone().map(|why| {
        view! { <span class="column-problem" data-testid="column-problem">{why}</span> }
    });
    view! {
        <th role="columnheader" class="sortable" title=title data-column=name.clone() data-added=added.then_some("true")
            on:click=move |_| on_sort.run(name_for_click.clone())>
            {name.to_uppercase()}
            <span class="sort-mark">{mark}</span>
            {remove}
            {problem}
        </th>
    }
}

/// A column's filter field, under its header: `text` matches inside a cell, `!text`
/// keeps the rows without it.
#[component]
pub fn FilterCell(
    name: String,
    text: Signal<String>,
    on_filter: Callback<(String, String)>,
) -> impl IntoView {
    let label = format!("Filter {name} (text, or !text for rows without it)");
    view! {
        <td role="gridcell">
            <input
                type="search"
                class="column-filter"
                class:active=move || !text.with(String::is_empty)
                data-column=name.clone()
                aria-label=label
                placeholder="text or !text"
                prop:value=move || text.get()
                on:input:target=move |ev| on_filter.run((name.clone(), ev.target().value()))
            />
        </td>
    }
}

#[component]
pub fn LiveRow(
    row: Row,
    columns: Signal<Vec<(usize, Column)>>,
    now: Signal<i64>,
    resource: Memo<ResourceRef>,
    link_rows: bool,
    selected: Signal<bool>,
    on_click: Callback<()>,
    usage: Option<Memo<TableUsage>>,
) -> impl IntoView {
    // kubectl top pod's figures, after kubectl get's columns (marked as extra).
    let usage_cells = usage.map(|usage| {
        let key = row_key(&row);
        move || {
            usage.with(|u| {
                u.has_figures().then(|| {
                    let (cpu, memory) = u.cells(&key);
                    view! {
                        <td role="gridcell" data-extra="usage" class="mono">{cpu}</td>
                        <td role="gridcell" data-extra="usage" class="mono">{memory}</td>
                    }
                })
            })
        }
    });
    let row = StoredValue::new(row);
    let href = move || {
        row.with_value(|r| {
            format!(
                "{}{}",
                crate::base::get(),
                resource.get().object_path(r.namespace.as_deref(), &r.name)
            )
        })
    };
    // A StackBinding's Stack and workload cells lead to them; `kind_at` is where the
    // row's Kind column is.
    let cell_link = move |column: &str, i: usize, kind_at: Option<usize>| -> Option<String> {
        row.with_value(|r| {
            let text = |index: usize| {
                r.cells
                    .get(index)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
            };
            let path = portico_core::portico_kinds::binding_cell_path(
                column,
                text(i),
                kind_at.map(text).unwrap_or_default(),
                r.namespace.as_deref(),
            )?;
            Some(format!("{}{path}", crate::base::get()))
        })
    };
    let cells = move || {
        let columns = columns.get();
        // Asked once per row, not per cell: only a bindings table links other cells.
        let links_cells = resource.with(|r| {
            r.group == portico_core::portico_kinds::GROUP
                && r.plural == portico_core::portico_kinds::BINDING_PLURAL
        });
        let kind_at = links_cells
            .then(|| {
                columns
                    .iter()
                    .find(|(_, c)| c.name == "Kind")
                    .map(|(k, _)| *k)
            })
            .flatten();
        columns
            .into_iter()
            .map(|(i, column)| {
                let value =
                    row.with_value(|r| r.cells.get(i).cloned().unwrap_or(serde_json::Value::Null));
                let is_name = column.format == "name";
                let is_date = column.kind == "date";
                let text =
                    move || cell_text(&value, &column.kind, if is_date { now.get() } else { 0 });
                if is_name && link_rows {
                    view! { <td role="gridcell" class="name"><a href=href>{text}</a></td> }.into_any()
                } else if let Some(link) = links_cells
                    .then(|| cell_link(&column.name, i, kind_at))
                    .flatten()
                {
                    view! { <td role="gridcell"><a href=link data-cell-link=column.name.clone()>{text}</a></td> }
                        .into_any()
                } else {
                    // Long cells are cut to the row's one line; the title shows all.
                    let title = text.clone();
                    view! { <td role="gridcell" title=title>{text}</td> }.into_any()
                }
            })
            .collect_view()
    };
    let deleting = row.with_value(|r| r.deleting);
    view! {
        <tr
            role="row"
            class="row"
            class:deleting=deleting
            class:selected=move || selected.get()
            aria-selected=move || selected.get().to_string()
            on:click=move |_| on_click.run(())
            data-uid=row.with_value(|r| r.uid.clone())
            data-name=row.with_value(|r| r.name.clone())
        >
            {cells}
            {usage_cells}
        </tr>
    }
}
