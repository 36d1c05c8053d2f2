//! The live views as Server-Sent Events, for scripts and `curl` (the browser uses the
//! WebSocket in [`crate::live::transports::socket`]). `GET /api/live/table`: a `snapshot`, then
//! `delta`s in order (each merging whatever queued up meanwhile), a `snapshot` again
//! whenever the viewer must resynchronise; `id:` is the position, so a client that
//! reconnects with `Last-Event-ID` receives only what it missed. `problem` says why a
//! table cannot be shown. `GET /api/live/children` and `GET /api/live/crds` likewise.

use std::convert::Infallible;

use axum::extract::{Extension, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, KeepAliveStream, Sse};
use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use portico_core::live::protocol::Position;
use portico_core::owner_tree::ChildrenQuery;
use portico_core::table::wire::{TableQuery, sse_event};

use crate::cluster::caller::Caller;
use crate::live::LiveState;
use crate::live::feeds::subscription::Delivery;
use crate::live::views::open::{self, Refusal};
use portico_core::live::protocol::{TableChange, TableUpdate};

type Events = Sse<KeepAliveStream<BoxStream<'static, Result<Event, Infallible>>>>;

fn sse(stream: impl Stream<Item = Event> + Send + 'static) -> Events {
    Sse::new(stream.map(Ok).boxed()).keep_alive(KeepAlive::default())
}

/// `GET /api/live/crds`: a `changed` event whenever the CRD catalog changes.
pub async fn live_crds(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
) -> Result<Events, Refusal> {
    Ok(sse(open::crd_changes(&state, &caller)?.map(|version| {
        Event::default().event("changed").data(version.to_string())
    })))
}

pub async fn live_table(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<TableQuery>,
    headers: HeaderMap,
) -> Result<Events, Refusal> {
    let resume = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(Position::from_event_id);
    let updates = open::table(&state, caller, query, headers, resume, Delivery::Whole).await?;
    Ok(sse(updates.map(table_event)))
}

pub async fn live_children(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ChildrenQuery>,
    headers: HeaderMap,
) -> Result<Events, Refusal> {
    let children = open::children(&state, caller, query, headers).await?;
    Ok(sse(children.map(|children| match children {
        Ok(children) => Event::default()
            .event("children")
            .json_data(&children)
            .unwrap_or_else(|_| {
                Event::default()
                    .event(sse_event::PROBLEM)
                    .data("Portico could not encode the children.")
            }),
        Err(ended) => Event::default().event(sse_event::PROBLEM).data(ended),
    })))
}

fn table_event(update: TableUpdate) -> Event {
    let id = update.at.to_event_id();
    let event = match &update.change {
        TableChange::Snapshot(table) => {
            Event::default().event(sse_event::SNAPSHOT).json_data(table)
        }
        TableChange::Delta(delta) => Event::default().event(sse_event::DELTA).json_data(delta),
        TableChange::Problem(p) | TableChange::Ended(p) => {
            return Event::default().event(sse_event::PROBLEM).data(p);
        }
        // SSE viewers take whole tables (`Delivery::Whole`): never sent parts.
        TableChange::Partial(_) | TableChange::Rows { .. } => {
            return Event::default().comment("part of a table");
        }
    };
    event.map(|e| e.id(id)).unwrap_or_else(|_| {
        Event::default()
            .event(sse_event::PROBLEM)
            .data("Portico could not encode this table.")
    })
}
