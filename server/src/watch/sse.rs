//! `GET /api/live/table`: a live table as Server-Sent Events. The first event is a
//! `snapshot`; then `delta`s in order, each merging whatever queued up meanwhile; a
//! `snapshot` again whenever the viewer must resynchronise (relist after 410 Gone,
//! or the viewer fell behind). A reconnecting EventSource starts with a snapshot, so
//! nothing is lost or duplicated; `id:` carries the resourceVersion.

use std::convert::Infallible;

use app::table::model::{MAX_SELECTOR_LEN, TableQuery, sse_event};
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};

use super::LiveState;
use super::coalesce::Coalescer;
use super::hub::{Next, Queued, Subscription};
use super::limits::StreamPermit;
use crate::kube::caller::Caller;

/// Upper bound of deltas merged into one message.
const MAX_MERGED: usize = 512;

/// `GET /api/live/crds`: a `changed` event whenever the CRD catalog changes, so
/// the navigation can refetch the list without polling.
pub async fn live_crds(
    State(state): State<LiveState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut changes = state.kinds.changes();
    let shutdown = state.shutdown.begun();
    let stream = async_stream::stream! {
        while changes.changed().await.is_ok() {
            let version = *changes.borrow_and_update();
            yield Ok(Event::default().event("changed").data(version.to_string()));
        }
    };
    Sse::new(stream.take_until(shutdown)).keep_alive(KeepAlive::default())
}

pub async fn live_table(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<TableQuery>,
    headers: axum::http::HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, (StatusCode, String)> {
    if !query.is_valid() {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "group, version, plural and namespace must be DNS-style names, and selectors at most {MAX_SELECTOR_LEN} bytes"
            ),
        ));
    }
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
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
        .auth
        .pool
        .for_caller(&caller)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if let Some(ns) = &query.namespace
        && !super::access::namespace_exists(&state, &client, ns).await
    {
        return Err((
            StatusCode::NOT_FOUND,
            format!("Namespace {ns} does not exist."),
        ));
    }
    let revoked = format!(
        "Your permission to watch {} here was withdrawn, or your sign-in ended; this view has stopped.",
        query.plural
    );
    let (group, plural, namespace) = (
        query.group.clone(),
        query.plural.clone(),
        query.namespace.clone(),
    );
    let subscription =
        state
            .hub
            .subscribe_as(query, &client, caller.feed_owner(), caller.person())?;
    let recheck_state = state.clone();
    // In token mode the view also ends with its session (signed out, expired).
    let still_allowed = move || {
        let (state, caller) = (recheck_state.clone(), caller.clone());
        let (group, plural, namespace) = (group.clone(), plural.clone(), namespace.clone());
        let signed_in =
            !matches!(caller, Caller::Bearer { .. }) || state.auth.session(&headers).is_some();
        async move {
            signed_in
                && super::access::still_may_watch(
                    &state,
                    &caller,
                    &group,
                    &plural,
                    namespace.as_deref(),
                )
                .await
        }
    };
    let stream = while_allowed(
        events(subscription),
        permit,
        state.limits.recheck,
        still_allowed,
        revoked,
    )
    .take_until(state.shutdown.begun());
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// `stream`, holding `permit` while it runs, ended with a `problem` event saying
/// `revoked` once `still_allowed` (asked every `every`) says no.
fn while_allowed<S, F, Fut>(
    stream: S,
    permit: StreamPermit,
    every: std::time::Duration,
    still_allowed: F,
    revoked: String,
) -> impl Stream<Item = Result<Event, Infallible>>
where
    S: Stream<Item = Result<Event, Infallible>> + Send,
    F: Fn() -> Fut + Send,
    Fut: std::future::Future<Output = bool> + Send,
{
    async_stream::stream! {
        let _permit = permit;
        let mut stream = std::pin::pin!(stream);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                item = stream.next() => match item {
                    Some(item) => yield item,
                    None => break,
                },
                _ = ticks.tick() => {
                    if !still_allowed().await {
                        yield Ok(Event::default().event(sse_event::PROBLEM).data(revoked.clone()));
                        break;
                    }
                }
            }
        }
    }
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
        Next::Ended(_) | Next::Delta(_) | Next::Closed => None,
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
                            Some(Queued::Delta(msg)) => {
                                seen = msg.seq;
                                if let super::hub::FeedEvent::Delta(d) = &msg.event {
                                    merged.push(d);
                                }
                            }
                            Some(Queued::Resync) => {
                                resync = true;
                                break;
                            }
                        }
                    }
                    if resync {
                        // A snapshot supersedes the merged deltas.
                        let next = sub.resync();
                        if let Next::Ended(message) = next {
                            yield Ok(Event::default().event(sse_event::PROBLEM).data(message));
                            break;
                        }
                        if let Some((event, seq)) = sync_event(next) {
                            seen = seq;
                            yield Ok(event);
                        }
                        continue;
                    }
                    let delta = merged.finish();
                    yield Ok(json_event(sse_event::DELTA, &delta.resource_version, &delta));
                }
                Next::Ended(message) => {
                    // The feed's credentials were refused: say so and end.
                    yield Ok(Event::default().event(sse_event::PROBLEM).data(message));
                    break;
                }
                Next::Closed => break,
            }
        }
    }
}
