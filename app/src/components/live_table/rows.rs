//! A live table's rows as they arrive: the snapshot (whole or in parts) and the
//! changes after it, applied at most once a frame.

use std::sync::Arc;
use std::time::Duration;

use leptos::prelude::*;

use crate::live::{ViewState, follow_signal};
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::table::state::TableState;
use portico_core::table::wire::{Row, TableDelta, TableQuery};

/// How often a snapshot that arrives in parts is shown so far.
const PARTS_EVERY: Duration = Duration::from_millis(300);

/// What arrived since the table was last updated.
#[derive(Default)]
struct Pending {
    rows: Vec<Arc<Row>>,
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

/// The table a view shows, whether its snapshot is whole, and how live it is.
#[derive(Clone, Copy)]
pub struct LiveRows {
    pub table: RwSignal<TableState>,
    pub complete: RwSignal<bool>,
    pub status: RwSignal<ViewState>,
}

/// Follows `query` over the tab's connection while the calling component lives.
pub fn use_live_rows(query: Signal<TableQuery>) -> LiveRows {
    let table = RwSignal::new(TableState::default());
    let complete = RwSignal::new(false);
    let status = RwSignal::new(ViewState::Waiting);
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
    LiveRows {
        table,
        complete,
        status,
    }
}
