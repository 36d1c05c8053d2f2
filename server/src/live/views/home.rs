//! The home page's live view: the person's own feeds of Stacks, bindings, Warning
//! events, Pods and workloads (the hub's, shared with every table they open), across
//! every namespace at once where they may watch the whole cluster, else in each
//! namespace they may list (at most [`MAX_NAMESPACES`]), summarized by
//! [`portico_core::overview::summarize`] and sent whole when the summary changes.

use std::collections::HashMap;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use futures::{Stream, StreamExt};
use portico_core::live::protocol::TableChange;
use portico_core::overview::{Followed, Overview, OverviewQuery, Watched, summarize};
use portico_core::resource::ResourceRef;
use portico_core::table::state::TableState;
use portico_core::table::wire::TableQuery;

use crate::cluster::caller::Caller;
use crate::live::LiveState;
use crate::live::feeds::subscription::Subscription;
use crate::live::views::home_scope::{REVIEWS_AT_ONCE, Scope, scopes};
use crate::live::views::open::{Refusal, client_in, signed_in};

/// A burst of changes (a rollout, a node's Pods) is summarized once: the whole
/// summary is computed again each time, over every Pod.
const SETTLE: Duration = Duration::from_millis(250);

/// The live home page for `caller`: `Err` (and the end) once their sign-in ended.
pub async fn open(
    state: &LiveState,
    caller: Caller,
    query: OverviewQuery,
    headers: HeaderMap,
) -> Result<impl Stream<Item = Result<Overview, String>> + Send + use<>, Refusal> {
    if !query.is_valid() {
        return Err((
            StatusCode::BAD_REQUEST,
            "namespace must be a DNS-style name".into(),
        ));
    }
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    let home = state
        .overviews
        .acquire_overview(caller.person(), &state.limits)?;
    let client = client_in(state, &caller, query.namespace.as_deref()).await?;
    let (scopes, mut unseen) = scopes(state, &caller, &client, query.namespace.as_deref()).await;
    let (scopes, subscriptions) = subscribe(state, &caller, &client, scopes, &mut unseen);
    let resolve = kind_resolver(state);
    let count = scopes.len();
    // Each list can be let go of alone (its permission withdrawn): its feed stops.
    let mut stops = Vec::with_capacity(count);
    let merged =
        futures::stream::select_all(subscriptions.into_iter().enumerate().map(|(i, sub)| {
            let (stream, stop) = futures::stream::abortable(sub.into_stream());
            stops.push(stop);
            stream.map(move |update| (i, update.change)).boxed()
        }));
    let every = state.limits.recheck;
    let recheck_state = state.clone();
    let updates = async_stream::stream! {
        let _permits = (permit, home);
        let mut tables: Vec<Slot> = vec![Slot::Waiting; count];
        let mut following = count > 0;
        let mut last: Option<Overview> = None;
        let mut merged = std::pin::pin!(merged);
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Nothing to follow (the person may see none of it) still gets its answer.
        let mut due = count == 0;
        loop {
            if due {
                due = false;
                let mut overview = summary(&scopes, &tables, &resolve);
                overview.unseen = unseen.clone();
                overview.unseen.extend(withdrawn_sentences(&scopes, &tables));
                if last.as_ref() != Some(&overview) {
                    last = Some(overview.clone());
                    yield Ok(overview);
                }
            }
            tokio::select! {
                change = merged.next(), if following => match change {
                    Some((i, change)) => {
                        let waiting = tables.iter().any(|slot| matches!(slot, Slot::Waiting));
                        apply(&mut tables, i, change);
                        // Take whatever else comes within the settling time; the
                        // moment the last list is in, the page has it at once.
                        let settle = tokio::time::sleep(SETTLE);
                        tokio::pin!(settle);
                        loop {
                            if waiting && !tables.iter().any(|slot| matches!(slot, Slot::Waiting)) {
                                break;
                            }
                            tokio::select! {
                                more = merged.next() => match more {
                                    Some((i, change)) => apply(&mut tables, i, change),
                                    None => break,
                                },
                                _ = &mut settle => break,
                            }
                        }
                        due = true;
                    }
                    // Every list let go of: the page keeps what it says.
                    None => following = false,
                },
                _ = ticks.tick() => {
                    if !signed_in(&recheck_state, &caller, &headers) {
                        yield Err("Your sign-in ended; this view has stopped.".to_string());
                        break;
                    }
                    // A kind's permission withdrawn in a namespace: its rows go, and
                    // nothing more of it is taken.
                    let withdrawn = withdrawn(&recheck_state, &caller, &headers, &scopes, &tables).await;
                    for i in withdrawn {
                        if let (Some(slot), Some(stop)) = (tables.get_mut(i), stops.get(i)) {
                            stop.abort();
                            *slot = Slot::Withdrawn;
                            due = true;
                        }
                    }
                }
            }
        }
    };
    Ok(updates.take_until(state.shutdown.begun()))
}

/// The person's subscriptions to each scope's feed, in order, as many as their bounds
/// allow: the scopes past the first refusal are dropped and the refusal is said.
fn subscribe(
    state: &LiveState,
    caller: &Caller,
    client: &kube::Client,
    scopes: Vec<Scope>,
    unseen: &mut Vec<String>,
) -> (Vec<Scope>, Vec<Subscription>) {
    let mut subscriptions = Vec::with_capacity(scopes.len());
    for scope in &scopes {
        let resource = scope.watched.resource();
        let table = TableQuery {
            group: resource.group,
            version: resource.version,
            plural: resource.plural,
            namespace: scope.namespace.clone(),
            label_selector: None,
            field_selector: scope.watched.field_selector().map(str::to_string),
            columns: None,
        };
        match state
            .hub
            .subscribe_as(table, client, caller.feed_owner(), caller.person())
        {
            Ok(subscription) => subscriptions.push(subscription),
            // What fits is shown; the bound is said.
            Err(refused) => {
                unseen.push(refused.to_string());
                break;
            }
        }
    }
    let scopes = scopes.into_iter().take(subscriptions.len()).collect();
    (scopes, subscriptions)
}

/// The lists the person may no longer watch (asked again, a few at a time; answers
/// younger than `recheck` reused).
async fn withdrawn(
    state: &LiveState,
    caller: &Caller,
    headers: &HeaderMap,
    scopes: &[Scope],
    tables: &[Slot],
) -> Vec<usize> {
    // Owned, so that the stream holding this future stays `Send`.
    let mut open: Vec<(usize, ResourceRef, Option<String>)> = Vec::new();
    for (i, (scope, slot)) in scopes.iter().zip(tables).enumerate() {
        if !matches!(slot, Slot::Withdrawn) {
            open.push((i, scope.watched.resource(), scope.namespace.clone()));
        }
    }
    let asked = open.into_iter().map(|(i, resource, namespace)| async move {
        let still = crate::live::views::access::still_may_watch(
            state,
            caller,
            headers,
            &resource.group,
            &resource.plural,
            namespace.as_deref(),
        )
        .await;
        (!still).then_some(i)
    });
    futures::stream::iter(asked)
        .buffer_unordered(REVIEWS_AT_ONCE)
        .filter_map(|i| async move { i })
        .collect()
        .await
}

/// What is known of one list.
#[derive(Clone)]
enum Slot {
    Waiting,
    Listed(TableState),
    /// Listed, then the feed failed (the API server away): its last rows are kept
    /// until it lists again, and the summary is not complete.
    Stale(TableState),
    /// It cannot be served (a kind not installed): nothing of it is shown.
    Unserved,
    /// The person may no longer watch it: nothing of it is shown, ever again.
    Withdrawn,
}

fn apply(tables: &mut [Slot], i: usize, change: TableChange) {
    let Some(slot) = tables
        .get_mut(i)
        .filter(|slot| !matches!(slot, Slot::Withdrawn))
    else {
        return;
    };
    match change {
        TableChange::Snapshot(snapshot) => {
            *slot = Slot::Listed(TableState::from_snapshot(snapshot))
        }
        TableChange::Delta(delta) => {
            if let Slot::Listed(state) = slot {
                state.apply(delta);
            }
        }
        TableChange::Problem(_) => {
            *slot = match std::mem::replace(slot, Slot::Unserved) {
                Slot::Listed(state) | Slot::Stale(state) => Slot::Stale(state),
                _ => Slot::Unserved,
            }
        }
        TableChange::Ended(_) => *slot = Slot::Unserved,
        // Whole tables only (the default delivery).
        TableChange::Partial(_) | TableChange::Rows { .. } => {}
    }
}

/// The summary of the lists received so far, each kind's namespaces together.
fn summary(
    scopes: &[Scope],
    tables: &[Slot],
    resolve: &HashMap<String, (ResourceRef, bool)>,
) -> Overview {
    let mut followed: Vec<Followed<'_>> = Vec::new();
    let mut complete = true;
    for (scope, table) in scopes.iter().zip(tables) {
        let table = match table {
            Slot::Listed(table) => table,
            Slot::Stale(table) => {
                complete = false;
                table
            }
            Slot::Waiting => {
                complete = false;
                continue;
            }
            Slot::Unserved | Slot::Withdrawn => continue,
        };
        match followed.iter_mut().find(|f| f.watched == scope.watched) {
            Some(same) => same.rows.extend(table.rows()),
            None => followed.push(Followed {
                watched: scope.watched,
                columns: &table.columns,
                rows: table.rows().collect(),
            }),
        }
    }
    let mut overview = summarize(&followed, &|kind| resolve.get(kind).cloned());
    overview.complete = complete;
    overview
}

/// The resource of each kind an event may name, by its lower-case name (`pod`,
/// `deployment`): Kubernetes' own kinds before a CRD's of the same name.
fn kind_resolver(state: &LiveState) -> HashMap<String, (ResourceRef, bool)> {
    let mut kinds = state.kinds.kinds();
    kinds.sort_by_key(|k| !k.flags.builtin);
    let mut found = HashMap::new();
    for kind in kinds {
        found
            .entry(kind.kind.to_lowercase())
            .or_insert_with(|| (kind.resource(None), kind.namespaced));
    }
    found
}

/// A sentence per kind whose permission was withdrawn while the page was open.
fn withdrawn_sentences(scopes: &[Scope], tables: &[Slot]) -> Vec<String> {
    let mut by_kind: Vec<(Watched, Vec<String>)> = Vec::new();
    for (scope, slot) in scopes.iter().zip(tables) {
        if !matches!(slot, Slot::Withdrawn) {
            continue;
        }
        let place = scope
            .namespace
            .clone()
            .unwrap_or_else(|| "all namespaces".into());
        match by_kind.iter_mut().find(|(kind, _)| *kind == scope.watched) {
            Some((_, places)) => places.push(place),
            None => by_kind.push((scope.watched, vec![place])),
        }
    }
    by_kind
        .into_iter()
        .map(|(kind, places)| {
            format!(
                "Your permission to see {} in {} was withdrawn: they are no longer shown.",
                kind.spoken(),
                places.join(", ")
            )
        })
        .collect()
}
