//! `GET /api/live/table`: a live table as Server-Sent Events. The first event is a
//! `snapshot`; then `delta`s in order, each merging whatever queued up meanwhile; a
//! `snapshot` again whenever the viewer must resynchronise (relist after 410 Gone,
//! or the viewer fell behind). A reconnecting EventSource starts with a snapshot, so
//! nothing is lost or duplicated; `id:` carries the resourceVersion.

use std::convert::Infallible;

use app::table::model::{TableQuery, sse_event};
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};

use super::coalesce::Coalescer;
use super::hub::{Next, Subscription};
use crate::identity::Caller;
use crate::state::AppState;

/// Upper bound of deltas merged into one message.
const MAX_MERGED: usize = 512;

/// `GET /api/live/crds`: a `changed` event whenever the CRD catalog changes, so
/// the navigation can refetch the list without polling.
pub async fn live_crds(
    State(state): State<AppState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut changes = state.catalog.changes();
    let shutdown = state.shutting_down();
    let stream = async_stream::stream! {
        while changes.changed().await.is_ok() {
            let version = *changes.borrow_and_update();
            yield Ok(Event::default().event("changed").data(version.to_string()));
        }
    };
    Sse::new(stream.take_until(shutdown)).keep_alive(KeepAlive::default())
}

pub async fn live_table(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<TableQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, (StatusCode, String)> {
    if !query.is_valid() {
        return Err((
            StatusCode::BAD_REQUEST,
            "group, version, plural and namespace must be DNS-style names".into(),
        ));
    }
    // A shared feed serves this viewer only if the API server says they may watch it.
    if !super::access::may_watch(
        &state,
        &caller,
        &query.group,
        &query.plural,
        query.namespace.as_deref(),
    )
    .await
    {
        let scope = query
            .namespace
            .as_deref()
            .map(|ns| format!(" in namespace {ns}"))
            .unwrap_or_default();
        return Err((
            StatusCode::FORBIDDEN,
            format!("{} may not watch {}{scope}.", caller.name(), query.plural),
        ));
    }
    let client = state
        .clients
        .for_caller(&caller)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let subscription = state.hub.subscribe_as(query, &client, caller.feed_owner());
    let stream = events(subscription).take_until(state.shutting_down());
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

fn json_event(name: &str, id: &str, data: &impl serde::Serialize) -> Event {
    let event = Event::default().event(name);
    let event = if id.is_empty() { event } else { event.id(id) };
    event.json_data(data).unwrap_or_else(|_| {
        Event::default()
            .event(sse_event::PROBLEM)
            .data("Portico could not encode this table.")
    })
}

/// The event that (re)synchronises a viewer, and the sequence number it brings it to.
fn sync_event(next: Next) -> Option<(Event, u64)> {
    match next {
        Next::Table(snapshot, seq) => Some((
            json_event(sse_event::SNAPSHOT, &snapshot.resource_version, &snapshot),
            seq,
        )),
        Next::Problem(message, seq) => Some((
            Event::default().event(sse_event::PROBLEM).data(message),
            seq,
        )),
        Next::Delta(_) | Next::Closed => None,
    }
}

fn events(mut sub: Subscription) -> impl Stream<Item = Result<Event, Infallible>> {
    async_stream::stream! {
        let mut seen = 0u64;
        loop {
            match sub.next(seen).await {
                next @ (Next::Table(..) | Next::Problem(..)) => {
                    if let Some((event, seq)) = sync_event(next) {
                        seen = seq;
                        yield Ok(event);
                    }
                }
                Next::Delta(first) => {
                    seen = first.seq;
                    let mut merged = Coalescer::default();
                    if let super::hub::FeedEvent::Delta(d) = &first.event {
                        merged.push(d);
                    }
                    let mut resync = false;
                    while merged.merged() < MAX_MERGED {
                        match sub.try_next_delta(seen) {
                            None => break,
                            Some(Ok(msg)) => {
                                seen = msg.seq;
                                if let super::hub::FeedEvent::Delta(d) = &msg.event {
                                    merged.push(d);
                                }
                            }
                            Some(Err(())) => {
                                resync = true;
                                break;
                            }
                        }
                    }
                    if resync {
                        // A snapshot supersedes the merged deltas.
                        if let Some((event, seq)) = sync_event(sub.resync()) {
                            seen = seq;
                            yield Ok(event);
                        }
                        continue;
                    }
                    let delta = merged.finish();
                    yield Ok(json_event(sse_event::DELTA, &delta.resource_version, &delta));
                }
                Next::Closed => break,
            }
        }
    }
}
