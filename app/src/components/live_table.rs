//! A table kept live over the tab's connection: kubectl's columns, sortable headers,
//! a text filter, ages that tick, and a badge saying how live it is.

use std::time::Duration;

use leptos::prelude::*;

use crate::components::live_badge::LiveBadge;
use crate::live::{ViewState, follow_signal};
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::resource::ResourceRef;
use portico_core::table::format::cell_text;
use portico_core::table::state::{SortKey, TableState};
use portico_core::table::wire::{Column, Row, TableDelta, TableQuery};

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

/// The height of one row in pixels; `style/main.css` gives `tr.row` this height, so
/// a scroll offset maps to a row index.
pub const ROW_PX: f64 = 34.0;
/// Rows rendered beyond the visible ones on each side, so fast scrolling shows rows
/// rather than blank space.
const OVERSCAN: usize = 10;
/// The window's height until the browser's is known.
const DEFAULT_VIEWPORT_PX: f64 = 1080.0;

/// How often a snapshot that arrives in parts is shown so far.
const PARTS_EVERY: Duration = Duration::from_millis(300);

/// What arrived since the table was last updated.
#[derive(Default)]
struct Pending {
    rows: Vec<Row>,
    deltas: Vec<TableDelta>,
    /// Whether the snapshot is whole, as the latest part said.
    complete: Option<bool>,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.deltas.is_empty() && self.complete.is_none()
    }

    /// Adds to what waits in `pending`; the first addition schedules `apply`, after
    /// `wait` or else at the next frame.
    fn add(
        pending: StoredValue<Pending>,
        apply: impl Fn() + Copy + 'static,
        wait: Option<Duration>,
        add: impl FnOnce(&mut Pending),
    ) {
        let first = pending.try_update_value(|p| {
            let idle = p.is_empty();
            add(p);
            idle
        });
        if first != Some(true) {
            return;
        }
        match wait {
            Some(wait) => set_timeout(apply, wait),
            None => {
                // Background tabs get no frames: a timer stands in for them.
                request_animation_frame(apply);
                set_timeout(apply, Duration::from_millis(250));
            }
        }
    }
}

/// The key a row is selected and deep-linked by: `namespace/name`, or `name`.
fn row_key(row: &Row) -> String {
    match &row.namespace {
        Some(ns) => format!("{ns}/{}", row.name),
        None => row.name.clone(),
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
    /// The selected row's key (`namespace/name`), e.g. from the URL, and where a new
    /// selection goes; kept inside the table when not given.
    #[prop(optional, into)]
    selected: Option<Signal<Option<String>>>,
    #[prop(optional)] on_select: Option<Callback<Option<String>>>,
) -> impl IntoView {
    let table = RwSignal::new(TableState::default());
    let complete = RwSignal::new(false);
    let status = RwSignal::new(ViewState::Waiting);
    let now = ticking_clock();
    // Snapshot parts and deltas are applied once per frame, however many arrived:
    // each application re-sorts and re-filters every row, which at 50,000 rows takes
    // a frame or more. Parts always come before deltas, so applying in that order
    // keeps the server's order.
    let pending = StoredValue::new(Pending::default());
    let apply_pending = move || {
        let Pending {
            rows,
            deltas,
            complete: whole,
        } = pending.try_update_value(std::mem::take).unwrap_or_default();
        if !rows.is_empty() || !deltas.is_empty() {
            table.update(|t| {
                t.extend(rows);
                deltas.into_iter().for_each(|d| t.apply(d));
            });
        }
        if let Some(whole) = whole {
            complete.set(whole);
        }
    };
    follow_signal(
        Signal::derive(move || Topic::Table { query: query.get() }),
        move |message| {
            status.update(|s| *s = s.after(&message));
            match message {
                ServerMessage::Snapshot {
                    table: t,
                    complete: whole,
                    ..
                } => {
                    // The snapshot holds every change still waiting.
                    pending.set_value(Pending::default());
                    table.set(TableState::from_snapshot(t));
                    complete.set(whole);
                }
                ServerMessage::Rows {
                    rows,
                    complete: whole,
                    ..
                } => {
                    // While a large snapshot streams in, the table is re-sorted a few
                    // times a second, not once per part; the last part shows at once.
                    let wait = (!whole).then_some(PARTS_EVERY);
                    Pending::add(pending, apply_pending, wait, |p| {
                        p.rows.extend(rows);
                        p.complete = Some(whole);
                    });
                    if whole {
                        apply_pending();
                    }
                }
                ServerMessage::Delta { delta, .. } => {
                    Pending::add(pending, apply_pending, None, |p| p.deltas.push(delta));
                }
                _ => {}
            }
        },
    );

    // The selection as the table shows it, changed at once by a click or a key; the
    // `selected` prop (the URL) follows a little later. A change of the prop that is
    // not the echo of one made here (a deep link, going back) moves the selection.
    let cursor = RwSignal::new(selected.and_then(|s| s.get_untracked()));
    let echoes = StoredValue::new(std::collections::VecDeque::<Option<String>>::new());
    Effect::new(move |_| {
        let Some(prop) = selected else { return };
        let value = prop.get();
        let echo = echoes
            .try_update_value(|q| {
                q.iter().position(|v| *v == value).map(|i| {
                    q.drain(..=i);
                })
            })
            .flatten()
            .is_some();
        if !echo {
            cursor.set(value);
        }
    });
    let select = move |key: Option<String>| {
        cursor.set(key.clone());
        if let Some(on_select) = on_select {
            echoes.update_value(|q| q.push_back(key.clone()));
            on_select.run(key);
        }
    };

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
        table.with(|t| {
            t.view(&f, s.as_ref(), w, now.get_untracked())
                .into_iter()
                .map(|r| (r.uid.clone(), row_key(r)))
                .collect::<Vec<(String, String)>>()
        })
    });
    let total = Memo::new(move |_| table.with(TableState::len));
    let resource = Memo::new(move |_| query.with(TableQuery::resource));

    let scroller = NodeRef::<leptos::html::Div>::new();
    let scroll_top = RwSignal::new(0.0_f64);
    let viewport = RwSignal::new(DEFAULT_VIEWPORT_PX);
    let window = Memo::new(move |_| {
        let len = order.with(Vec::len);
        let first = (scroll_top.get() / ROW_PX).floor().max(0.0) as usize;
        let shown = (viewport.get() / ROW_PX).ceil() as usize;
        let start = first.saturating_sub(OVERSCAN).min(len);
        let end = (first + shown + OVERSCAN).min(len);
        (start, end, len)
    });
    let rows = Memo::new(move |_| {
        let (start, end, _) = window.get();
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

    // Brings row `index` into view, scrolling as little as needed.
    let reveal = move |index: usize| {
        let Some(el) = scroller.get_untracked() else {
            return;
        };
        let top = index as f64 * ROW_PX;
        let height = f64::from(el.client_height());
        let current = f64::from(el.scroll_top());
        let header = ROW_PX;
        if top < current {
            el.set_scroll_top(top as i32);
        } else if top + ROW_PX + header > current + height {
            el.set_scroll_top((top + ROW_PX + header - height) as i32);
        }
    };
    // A deep link names a row: scroll to it once it has arrived.
    let revealed = StoredValue::new(false);
    Effect::new(move |_| {
        if revealed.get_value() {
            return;
        }
        let Some(key) = cursor.get() else { return };
        if let Some(index) = position_of(&key) {
            revealed.set_value(true);
            reveal(index);
        }
    });
    // The window can show at most the browser window's height of rows (the table's
    // own height, before its rows arrive, says nothing).
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let height = web_sys::window()
            .and_then(|w| w.inner_height().ok())
            .and_then(|h| h.as_f64());
        if let Some(height) = height {
            viewport.set(height.max(ROW_PX));
        }
    });

    let navigate = leptos_router::hooks::use_navigate();
    let on_key = move |ev: leptos::ev::KeyboardEvent| {
        let len = order.with(Vec::len);
        if len == 0 {
            return;
        }
        let page = ((viewport.get_untracked() / ROW_PX) as usize)
            .saturating_sub(1)
            .max(1);
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
        select(order.with(|o| o.get(next).map(|(_, k)| k.clone())));
        reveal(next);
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
                    if complete.get() { counted } else { format!("{counted} so far…") }
                }}
            </span>
        </div>
        <div
            class="table-window"
            node_ref=scroller
            tabindex="0"
            role="grid"
            aria-label="Objects; arrow keys move the selection, Enter opens it"
            aria-rowcount=move || window.get().2
            on:scroll=move |_| {
                if let Some(el) = scroller.get_untracked() {
                    scroll_top.set(f64::from(el.scroll_top()));
                }
            }
            on:keydown=on_key
        >
            <table class="grid live" data-testid="live-table">
                <thead>
                    <tr>
                        <For each=move || columns.get() key=|(i, c)| (*i, c.name.clone()) let:((_, column))>
                            <HeaderCell column sort on_sort/>
                        </For>
                    </tr>
                </thead>
                <tbody>
                    <tr class="spacer" aria-hidden="true" style=move || format!("height: {}px", window.get().0 as f64 * ROW_PX)></tr>
                    <For
                        each=move || rows.get()
                        key=|row| (row.uid.clone(), row.resource_version.clone())
                        let:row
                    >
                        {
                            let key = row_key(&row);
                            let key_for_click = key.clone();
                            let is_selected = Signal::derive(move || cursor.with(|s| s.as_deref() == Some(key.as_str())));
                            view! {
                                <LiveRow row columns=columns.into() now=now.into() resource link_rows
                                    selected=is_selected on_click=Callback::new(move |()| select(Some(key_for_click.clone())))/>
                            }
                        }
                    </For>
                    <tr class="spacer" aria-hidden="true" style=move || {
                        let (_, end, len) = window.get();
                        format!("height: {}px", (len - end) as f64 * ROW_PX)
                    }></tr>
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
    selected: Signal<bool>,
    on_click: Callback<()>,
) -> impl IntoView {
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
                    // Long cells are cut to the row's one line; the title shows all.
                    let title = text.clone();
                    view! { <td title=title>{text}</td> }.into_any()
                }
            })
            .collect_view()
    };
    let deleting = row.with_value(|r| r.deleting);
    view! {
        <tr
            class="row"
            class:deleting=deleting
            class:selected=move || selected.get()
            aria-selected=move || selected.get().to_string()
            on:click=move |_| on_click.run(())
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
        let ticker =
            set_interval_with_handle(move || now.set(now_seconds()), Duration::from_secs(1)).ok();
        on_cleanup(move || {
            if let Some(t) = ticker {
                t.clear();
            }
        });
    }
    now
}
