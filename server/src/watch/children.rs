//! `GET /api/live/children`: the objects whose ownerReferences name a given uid, live.
//! It joins the hub's shared feeds of every kind a child can be (in the owner's
//! namespace) and sends the full, small list again whenever it changes.

use std::convert::Infallible;
use std::time::Duration;

use app::table::format::cell_text;
use app::table::model::{ChildEntry, ChildrenQuery, TableQuery};
use app::table::state::TableState;
use axum::extract::{Extension, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::{Stream, StreamExt};

use super::LiveState;
use super::hub::{FeedEvent, Next, Subscription, WatchHub};
use super::limits::LimitRefused;
use crate::kube::caller::Caller;
use crate::kube::registry::ChildKind;

/// Who the children's feeds run for: the client they use, the identity that client
/// acts with (feeds are shared per identity) and the person they count against.
pub struct Viewer<'a> {
    pub client: &'a kube::Client,
    pub owner: Option<String>,
    pub person: Option<String>,
}

/// Debounce so a burst of changes (a rollout) is sent once.
const SETTLE: Duration = Duration::from_millis(50);

/// The live list of `uid`'s children in `namespace`, among `kinds`.
/// `viewer` is the client the feeds run as and the name of its identity.
pub fn children_stream(
    hub: &WatchHub,
    viewer: Viewer<'_>,
    kinds: Vec<ChildKind>,
    namespace: String,
    uid: String,
) -> Result<impl Stream<Item = Vec<ChildEntry>> + use<>, LimitRefused> {
    let feeds: Vec<(ChildKind, Subscription)> = kinds
        .into_iter()
        .map(|k| {
            let query = TableQuery {
                group: k.resource.group.clone(),
                version: k.resource.version.clone(),
                plural: k.resource.plural.clone(),
                namespace: Some(namespace.clone()),
                label_selector: None,
                field_selector: None,
            };
            let sub = hub.subscribe_as(
                query,
                viewer.client,
                viewer.owner.clone(),
                viewer.person.clone(),
            )?;
            Ok((k, sub))
        })
        .collect::<Result<_, LimitRefused>>()?;
    let count = feeds.len();
    // One stream of (feed index, message) per kind, merged.
    let merged =
        futures::stream::select_all(feeds.into_iter().enumerate().map(|(i, (kind, sub))| {
            futures::stream::unfold((sub, 0u64), move |(mut sub, seen)| async move {
                let next = sub.next(seen).await;
                let seen = match &next {
                    Next::Table(_, s) | Next::Problem(_, s) => *s,
                    Next::Delta(m) => m.seq,
                    Next::Ended(_) => u64::MAX,
                    Next::Closed => return None,
                };
                Some(((i, next), (sub, seen)))
            })
            .map(move |item| (kind.clone(), item))
            .boxed()
        }));
    Ok(async_stream::stream! {
        let mut tables: Vec<Option<(ChildKind, TableState)>> = vec![None; count];
        let mut last: Option<Vec<ChildEntry>> = None;
        let mut merged = Box::pin(merged);
        while let Some((kind, (i, next))) = merged.next().await {
            apply(&mut tables, i, kind, next);
            // Take whatever else is ready before recomputing.
            let settle = tokio::time::sleep(SETTLE);
            tokio::pin!(settle);
            loop {
                tokio::select! {
                    more = merged.next() => match more {
                        Some((kind, (i, next))) => apply(&mut tables, i, kind, next),
                        None => break,
                    },
                    _ = &mut settle => break,
                }
            }
            let children = collect(&tables, &uid, &namespace);
            if last.as_ref() != Some(&children) {
                last = Some(children.clone());
                yield children;
            }
        }
    })
}

fn apply(tables: &mut [Option<(ChildKind, TableState)>], i: usize, kind: ChildKind, next: Next) {
    let Some(slot) = tables.get_mut(i) else {
        return;
    };
    match next {
        Next::Table(snapshot, _) => *slot = Some((kind, TableState::from_snapshot(snapshot))),
        Next::Delta(msg) => {
            if let (Some((_, state)), FeedEvent::Delta(d)) = (slot.as_mut(), msg.event) {
                state.apply(d);
            }
        }
        // A kind this viewer may not list simply contributes no children.
        Next::Problem(..) | Next::Ended(_) => *slot = None,
        Next::Closed => {}
    }
}

fn collect(
    tables: &[Option<(ChildKind, TableState)>],
    uid: &str,
    namespace: &str,
) -> Vec<ChildEntry> {
    let mut out = Vec::new();
    for (kind, state) in tables.iter().flatten() {
        for row in state.view("", None, false, 0) {
            if !row.owners.iter().any(|o| o == uid) {
                continue;
            }
            let summary = state
                .visible_columns(false)
                .into_iter()
                .filter_map(|i| {
                    let column = state.columns.get(i)?;
                    (column.format != "name" && column.kind != "date").then(|| {
                        let value = row.cells.get(i).cloned().unwrap_or(serde_json::Value::Null);
                        format!("{}: {}", column.name, cell_text(&value, &column.kind, 0))
                    })
                })
                .collect::<Vec<_>>()
                .join(" · ");
            out.push(ChildEntry {
                kind: kind.kind.clone(),
                name: row.name.clone(),
                href: format!("{}/{namespace}/{}", kind.resource.page_path(), row.name),
                summary,
                deleting: row.deleting,
            });
        }
    }
    out.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    out
}

pub async fn live_children(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<ChildrenQuery>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, (StatusCode, String)> {
    if !app::table::model::is_path_segment(&query.namespace) {
        return Err((
            StatusCode::BAD_REQUEST,
            "namespace must be a DNS-style name".into(),
        ));
    }
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    // Children are looked for only among the kinds this viewer may watch there (the
    // reviews run at once: they stand between the viewer and the page's first list).
    let candidates = state.kinds.child_kinds();
    let checks = candidates.iter().map(|kind| {
        let resource = &kind.resource;
        super::access::may_watch(
            &state,
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
    let client = state
        .auth
        .pool
        .for_caller(&caller)
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if !super::access::namespace_exists(&state, &client, &query.namespace).await {
        return Err((
            StatusCode::NOT_FOUND,
            format!("Namespace {} does not exist.", query.namespace),
        ));
    }
    let viewer = Viewer {
        client: &client,
        owner: caller.feed_owner(),
        person: caller.person(),
    };
    let stream = children_stream(&state.hub, viewer, kinds, query.namespace, query.uid)?
        .take_until(state.shutdown.begun())
        .map(move |children| {
            // The stream holds its place among the person's live views while it runs.
            let _held = &permit;
            Ok(Event::default()
                .event("children")
                .json_data(&children)
                .unwrap_or_else(|_| {
                    Event::default()
                        .event("problem")
                        .data("Portico could not encode the children.")
                }))
        });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}
