//! Opening a live view for a viewer, whatever carries it (the tab's WebSocket or an
//! SSE stream): the checks (valid query, limits, permission, namespace), the shared
//! feeds, the periodic re-check that ends a view whose permission was withdrawn, and
//! the end at shutdown. Each view holds its place among the person's views while
//! it runs.

use axum::http::{HeaderMap, StatusCode};
use futures::{Stream, StreamExt};
use portico_core::live::protocol::Position;
use portico_core::owner_tree::{ChildEntry, ChildrenQuery};
use portico_core::resource::ResourceRef;
use portico_core::table::added_columns::{MAX_ADDED_COLUMNS, MAX_SPEC_LEN};
use portico_core::table::wire::{MAX_SELECTOR_LEN, TableQuery};

use crate::cluster::caller::Caller;
use crate::cluster::registry::ChildKind;
use crate::live::LiveState;
use crate::live::feeds::subscription::Delivery;
use crate::live::views::children::{Viewer, children_stream};
use portico_core::live::protocol::{TableChange, TableUpdate};

/// The least time between two change messages of one live table.
const CHANGE_WINDOW: std::time::Duration = std::time::Duration::from_millis(25);

/// Why a view was refused: the status an HTTP route answers, and the sentence.
pub type Refusal = (StatusCode, String);

/// A live table for `caller`, from `resume` if the feed still has the history.
/// `headers` are the request's (in token mode the view ends with its session).
pub async fn table(
    state: &LiveState,
    caller: Caller,
    query: TableQuery,
    headers: HeaderMap,
    resume: Option<Position>,
    delivery: Delivery,
) -> Result<impl Stream<Item = TableUpdate> + Send + use<>, Refusal> {
    if !query.is_valid() {
        return Err((
            StatusCode::BAD_REQUEST,
            format!(
                "group, version, plural and namespace must be DNS-style names, selectors at most {MAX_SELECTOR_LEN} bytes, and added columns at most {MAX_ADDED_COLUMNS} in {MAX_SPEC_LEN} bytes"
            ),
        ));
    }
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    // A shared feed serves this viewer only if the API server says they may watch it.
    if !crate::live::views::access::may_watch(
        state,
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
    let client = client_in(state, &caller, query.namespace.as_deref()).await?;
    let revoked = format!(
        "Your permission to watch {} here was withdrawn, or your sign-in ended; this view has stopped.",
        query.plural
    );
    let (group, plural, namespace) = (
        query.group.clone(),
        query.plural.clone(),
        query.namespace.clone(),
    );
    let subscription = state
        .hub
        .subscribe_as(query, &client, caller.feed_owner(), caller.person())?
        .resuming(resume)
        .delivered(delivery);
    let recheck_state = state.clone();
    let still_allowed = move || {
        let (state, caller) = (recheck_state.clone(), caller.clone());
        let (group, plural, namespace) = (group.clone(), plural.clone(), namespace.clone());
        let headers = headers.clone();
        async move {
            signed_in(&state, &caller, &headers)
                && crate::live::views::access::still_may_watch(
                    &state,
                    &caller,
                    &headers,
                    &group,
                    &plural,
                    namespace.as_deref(),
                )
                .await
        }
    };
    let every = state.limits.recheck;
    let updates = async_stream::stream! {
        let _permit = permit;
        let mut updates = std::pin::pin!(subscription.into_stream());
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut at = None;
        loop {
            tokio::select! {
                update = updates.next() => match update {
                    Some(update) => {
                        at = Some(update.at.clone());
                        let change = matches!(update.change, TableChange::Delta(_));
                        yield update;
                        if change {
                            // Changes that arrive meanwhile go out as one message: a
                            // busy list costs a viewer (and the portal) a message per
                            // window, not one per watch event.
                            tokio::time::sleep(CHANGE_WINDOW).await;
                        }
                    }
                    None => break,
                },
                _ = ticks.tick() => {
                    if !still_allowed().await {
                        let at = at.clone().unwrap_or(Position { feed: String::new(), seq: 0 });
                        yield TableUpdate { change: TableChange::Ended(revoked.clone()), at };
                        break;
                    }
                }
            }
        }
    };
    Ok(updates.take_until(state.shutdown.begun()))
}

/// The live list of the objects `query.uid` owns, among the kinds the viewer may
/// watch in the namespace; `Err` (and the end) once the viewer's sign-in ended or a
/// permission it was opened with was withdrawn (asked again every `recheck`).
pub async fn children(
    state: &LiveState,
    caller: Caller,
    query: ChildrenQuery,
    headers: HeaderMap,
) -> Result<impl Stream<Item = Result<Vec<ChildEntry>, String>> + Send + use<>, Refusal> {
    if !portico_core::resource::is_path_segment(&query.namespace) {
        return Err((
            StatusCode::BAD_REQUEST,
            "namespace must be a DNS-style name".into(),
        ));
    }
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    // The reviews run at once: they stand between the viewer and the page's first list.
    let candidates = state
        .kinds
        .child_kinds(&query.group, state.limits.child_kinds);
    let checks = candidates.iter().map(|kind| {
        let resource = &kind.resource;
        crate::live::views::access::may_watch(
            state,
            &caller,
            &resource.group,
            &resource.plural,
            Some(&query.namespace),
        )
    });
    let allowed = futures::future::join_all(checks).await;
    let kinds: Vec<ChildKind> = candidates
        .into_iter()
        .zip(allowed)
        .filter_map(|(kind, ok)| ok.then_some(kind))
        .collect();
    let client = client_in(state, &caller, Some(&query.namespace)).await?;
    let viewer = Viewer {
        client: &client,
        owner: caller.feed_owner(),
        person: caller.person(),
    };
    let watched: Vec<ResourceRef> = kinds.iter().map(|k| k.resource.clone()).collect();
    let namespace = query.namespace.clone();
    let stream = children_stream(&state.hub, viewer, kinds, query.namespace, query.uid)?;
    let (recheck_state, every) = (state.clone(), state.limits.recheck);
    let still_allowed = move || {
        let (state, caller, watched) = (recheck_state.clone(), caller.clone(), watched.clone());
        let (namespace, headers) = (namespace.clone(), headers.clone());
        async move {
            if !signed_in(&state, &caller, &headers) {
                return false;
            }
            let checks = watched.iter().map(|r| {
                crate::live::views::access::still_may_watch(
                    &state,
                    &caller,
                    &headers,
                    &r.group,
                    &r.plural,
                    Some(&namespace),
                )
            });
            futures::future::join_all(checks)
                .await
                .into_iter()
                .all(|ok| ok)
        }
    };
    let updates = async_stream::stream! {
        let _permit = permit;
        let mut children = std::pin::pin!(stream);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                update = children.next() => match update {
                    Some(children) => yield Ok(children),
                    None => break,
                },
                _ = ticks.tick() => {
                    if !still_allowed().await {
                        yield Err("Your permission to watch these children was withdrawn, or your sign-in ended; this view has stopped.".to_string());
                        break;
                    }
                }
            }
        }
    };
    Ok(updates.take_until(state.shutdown.begun()))
}

/// The client acting as `caller`, once `namespace` (if any) is known to exist.
pub(in crate::live) async fn client_in(
    state: &LiveState,
    caller: &Caller,
    namespace: Option<&str>,
) -> Result<kube::Client, Refusal> {
    let client = state
        .auth
        .pool
        .for_caller(caller)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if let Some(ns) = namespace
        && !crate::live::views::access::namespace_exists(
            state,
            &client,
            caller.person().as_deref(),
            ns,
        )
        .await
    {
        return Err((
            StatusCode::NOT_FOUND,
            format!("Namespace {ns} does not exist."),
        ));
    }
    Ok(client)
}

/// Whether the viewer's sign-in still holds: in token mode, the session the request
/// carried is live (not signed out, not expired); other callers have no session to end.
pub fn signed_in(state: &LiveState, caller: &Caller, headers: &HeaderMap) -> bool {
    !matches!(caller, Caller::Bearer { .. }) || state.auth.session(headers).is_some()
}

/// The CRD catalog's version, each time it changes; a live view like the others,
/// counted against the caller's streams.
pub fn crd_changes(
    state: &LiveState,
    caller: &Caller,
) -> Result<impl Stream<Item = u64> + Send + use<>, Refusal> {
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    let mut changes = state.kinds.changes();
    let updates = async_stream::stream! {
        let _permit = permit;
        while changes.changed().await.is_ok() {
            let version = *changes.borrow_and_update();
            yield version;
        }
    };
    Ok(updates.take_until(state.shutdown.begun()))
}
