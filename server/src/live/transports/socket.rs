//! `GET /api/live`: a tab's one live connection, a WebSocket carrying every view the
//! page holds (tables, children, the navigation), so any number of tabs fits in the
//! browser's six HTTP/1.1 connections per host. Views are opened and closed by
//! messages (see [`portico_core::live::protocol`]); each runs as its own stream, merged
//! into the socket, and an unsubscribed view stops at once. A slow socket holds up
//! only itself: its views fall behind in their feeds' queues and catch up after.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::stream::{AbortHandle, BoxStream, SelectAll, SplitSink};
use futures::{SinkExt, Stream, StreamExt};
use portico_core::live::protocol::{
    ClientMessage, MAX_CLIENT_MESSAGE, MAX_SUBSCRIPTIONS, Position, ServerMessage, Topic,
};
use portico_core::table::wire::{Row, TableSnapshot};

use crate::auth::RenewAt;
use crate::cluster::caller::Caller;
use crate::live::LiveState;
use crate::live::feeds::subscription::{Delivery, LATER_PART};
use crate::live::logs::container::{self, LogUpdate};
use crate::live::logs::workload;
use crate::live::views::home;
use crate::live::views::open;
use portico_core::live::protocol::{TableChange, TableUpdate};

/// How long one message may take to leave before the socket is given up.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a socket asks whether its sign-in still holds (a local check: the
/// session's cookie still opens), so sign-out in one tab stops the others within this.
const SESSION_CHECK: Duration = Duration::from_secs(2);

/// What every view of a socket whose sign-in ended is told before it closes.
const SIGNED_OUT: &str =
    "Your sign-in ended (signed out, or it expired): sign in again to see live changes.";

/// A socket is closed to renew its sign-in only if that is due this long after it
/// opened, in seconds.
const RENEW_MARGIN: u64 = 5;

/// How often an idle socket is pinged, so proxies do not close it and a vanished
/// peer is noticed.
const PING_EVERY: Duration = Duration::from_secs(25);

pub async fn live_socket(
    State(state): State<LiveState>,
    Extension(caller): Extension<Caller>,
    renew_at: Option<Extension<RenewAt>>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    // A WebSocket is not bound by the same-origin policy: a page on another site
    // could open one with this person's cookie. Its handshake always carries Origin.
    if let Some(reason) = crate::auth::csrf::cross_site_reason(&Method::POST, &headers) {
        tracing::warn!(reason, "refused a cross-site live connection");
        return (
            StatusCode::FORBIDDEN,
            "Portico refuses live connections from other sites.",
        )
            .into_response();
    }
    let sockets = state.sockets.acquire_socket(caller.person(), &state.limits);
    let permit = match sockets {
        Ok(permit) => permit,
        Err(refused) => return <(StatusCode, String)>::from(refused).into_response(),
    };
    upgrade
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(MAX_CLIENT_MESSAGE)
        .max_frame_size(MAX_CLIENT_MESSAGE)
        .on_upgrade(move |socket| async move {
            serve(socket, state, caller, headers, renew_at.map(|r| r.0.0)).await;
            drop(permit);
        })
}

/// Every open view's messages, merged: (subscription id, which opening of it, the
/// message, or `None` once the view has ended).
type Views = SelectAll<BoxStream<'static, (u32, u64, Option<ServerMessage>)>>;

#[tracing::instrument(name = "live_socket", skip_all, fields(caller = caller.name()))]
async fn serve(
    socket: WebSocket,
    state: LiveState,
    caller: Caller,
    headers: HeaderMap,
    renew_at: Option<u64>,
) {
    let (mut sink, mut incoming) = socket.split();
    let mut views: Views = SelectAll::new();
    // The views open now, by id, with the opening they came from (an id may be reused).
    let mut open: HashMap<u32, (u64, AbortHandle)> = HashMap::new();
    let mut openings = 0u64;
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut session_check = tokio::time::interval(SESSION_CHECK);
    let has_session = matches!(caller, Caller::Bearer { .. });
    let shutdown = state.shutdown.begun();
    tokio::pin!(shutdown);
    let mut closing = None;
    // A token due within moments of connecting (a provider handing out short ones, or
    // clocks apart) would close every reconnection at once: such a socket lives on,
    // and its views end as any other's when the token is refused.
    let renew_at = renew_at.filter(|at| *at > crate::auth::session::now_secs() + RENEW_MARGIN);
    // A sign-out on this replica is looked at at once, not at the next check.
    let mut sign_outs = state.auth.identity.sessions.as_ref().map(|k| k.sign_outs());
    loop {
        tokio::select! {
            frame = incoming.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text,
                    Some(Ok(Message::Close(_)) | Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                match serde_json::from_str::<ClientMessage>(text.as_str()) {
                    Ok(ClientMessage::Subscribe { id, topic, resume }) => {
                        if let Some((_, old)) = open.remove(&id) {
                            old.abort();
                        }
                        let view = if open.len() >= MAX_SUBSCRIPTIONS {
                            refused(id, format!("A page may hold {MAX_SUBSCRIPTIONS} live views at most."))
                        } else {
                            view(&state, &caller, &headers, id, topic, resume)
                        };
                        openings += 1;
                        let opening = openings;
                        let (view, handle) = futures::stream::abortable(view);
                        open.insert(id, (opening, handle));
                        let ended = futures::stream::once(async move { (id, opening, None) });
                        views.push(view.map(move |m| (id, opening, Some(m))).chain(ended).boxed());
                    }
                    Ok(ClientMessage::Unsubscribe { id }) => {
                        if let Some((_, handle)) = open.remove(&id) {
                            handle.abort();
                        }
                    }
                    Err(error) => {
                        tracing::debug!(%error, "unreadable live message; closing");
                        break;
                    }
                }
            }
            Some((id, opening, message)) = views.next(), if !views.is_empty() => {
                let Some(message) = message else {
                    // A view that ended (refused, or its feed ended) no longer counts.
                    if open.get(&id).is_some_and(|(o, _)| *o == opening) {
                        open.remove(&id);
                    }
                    continue;
                };
                let Ok(text) = serde_json::to_string(&message) else { continue };
                if !sent(&mut sink, Message::Text(text.into())).await {
                    break;
                }
            }
            Some(Ok(())) = async { match sign_outs.as_mut() {
                Some(rx) => Some(rx.changed().await),
                None => std::future::pending().await,
            } }, if has_session => {
                session_check.reset_immediately();
            }
            _ = session_check.tick(), if has_session => {
                // Single sign-on: the ID token this socket's views act with is due for
                // renewal. Closing lets the page reconnect (resuming where its views
                // were), and the reconnection renews the token.
                if renew_at.is_some_and(|at| crate::auth::session::now_secs() >= at) {
                    tracing::debug!("the ID token is due for renewal; closing the live socket");
                    closing = Some(CloseFrame {
                        code: portico_core::live::protocol::CLOSE_TO_RENEW,
                        reason: "renew sign-in".into(),
                    });
                    break;
                }
                if !open::signed_in(&state, &caller, &headers) {
                    tracing::info!("sign-in ended; closing the live socket");
                    for &id in open.keys() {
                        let message = ServerMessage::Refused { id, message: SIGNED_OUT.into() };
                        let Ok(text) = serde_json::to_string(&message) else { continue };
                        if !sent(&mut sink, Message::Text(text.into())).await {
                            break;
                        }
                    }
                    break;
                }
            }
            _ = ping.tick() => {
                if !sent(&mut sink, Message::Ping(Default::default())).await {
                    break;
                }
            }
            _ = &mut shutdown => break,
        }
    }
    let _ = sent(&mut sink, Message::Close(closing)).await;
}

/// Sends `message`; false when the socket failed, or when the page has not taken it
/// within [`SEND_TIMEOUT`] (a page that stopped reading must not hold the socket's
/// task, and its views' places, forever; shutdown waits for nothing longer).
async fn sent(sink: &mut SplitSink<WebSocket, Message>, message: Message) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await,
        Ok(Ok(()))
    )
}

fn refused(id: u32, message: String) -> BoxStream<'static, ServerMessage> {
    futures::stream::once(async move { ServerMessage::Refused { id, message } }).boxed()
}

/// One view as messages for subscription `id`; opened inside the stream, so its
/// checks (access reviews) do not hold up the socket's other views.
fn view(
    state: &LiveState,
    caller: &Caller,
    headers: &HeaderMap,
    id: u32,
    topic: Topic,
    resume: Option<Position>,
) -> BoxStream<'static, ServerMessage> {
    let (state, caller, headers) = (state.clone(), caller.clone(), headers.clone());
    match topic {
        Topic::Crds => opened(id, async move {
            let changes = open::crd_changes(&state, &caller)?;
            Ok(changes.map(move |_| ServerMessage::Changed { id }))
        }),
        Topic::Table { query } => opened(id, async move {
            let updates =
                open::table(&state, caller, query, headers, resume, Delivery::InParts).await?;
            Ok(updates.flat_map(move |u| futures::stream::iter(table_messages(id, u))))
        }),
        Topic::Children { query } => opened(id, async move {
            let children = open::children(&state, caller, query, headers).await?;
            Ok(children.map(move |children| match children {
                Ok(children) => ServerMessage::Children { id, children },
                Err(message) => ServerMessage::Refused { id, message },
            }))
        }),
        Topic::Overview { query } => opened(id, async move {
            let overviews = home::open(&state, caller, query, headers).await?;
            Ok(overviews.map(move |overview| match overview {
                Ok(overview) => ServerMessage::Overview { id, overview },
                Err(message) => ServerMessage::Refused { id, message },
            }))
        }),
        Topic::Logs { query } => opened(id, async move {
            let updates = container::open(&state, caller, query, headers).await?;
            Ok(updates.map(move |u| log_message(id, u)))
        }),
        Topic::WorkloadLogs { query } => opened(id, async move {
            let updates = workload::open(&state, caller, query, headers).await?;
            Ok(updates.map(move |u| log_message(id, u)))
        }),
    }
}

/// The messages of a view once `open` has admitted it, or its refusal.
fn opened<S>(
    id: u32,
    open: impl Future<Output = Result<S, open::Refusal>> + Send + 'static,
) -> BoxStream<'static, ServerMessage>
where
    S: Stream<Item = ServerMessage> + Send + 'static,
{
    // Boxed apart, the opening (access reviews and all, about 4 KB) is freed once it
    // is done, rather than kept inline for as long as the view lives.
    futures::stream::once(Box::pin(async move {
        match open.await {
            Ok(messages) => messages.boxed(),
            Err((_, message)) => refused(id, message),
        }
    }))
    .flatten()
    .boxed()
}

/// A snapshot larger than this comes in parts: the first this many rows (in
/// namespace and name order, the table's default), then [`LATER_PART`] at a time.
/// Parts stay small (about 20 KB) because a WebSocket keeps a send buffer as large as
/// the largest message it ever sent: 200 viewers of a 2 MB snapshot held 525 MB, and
/// a thousand people held over 100 MB with parts of 500 rows, 42 MB with 200.
pub(crate) const FIRST_PART: usize = 100;
/// The page sends only small messages; the default 128 KiB read buffer per socket
/// would be most of a socket's memory. Messages to the page are written as they
/// come (`write_buffer_size(0)`), so the write buffer holds one message, not 128 KiB.
const READ_BUFFER: usize = 4 * 1024;

fn log_message(id: u32, update: LogUpdate) -> ServerMessage {
    match update {
        LogUpdate::Opened {
            container,
            containers,
        } => ServerMessage::LogOpened {
            id,
            container,
            containers,
        },
        LogUpdate::Lines { lines, skipped } => ServerMessage::Log { id, lines, skipped },
        LogUpdate::Waiting(message) => ServerMessage::Problem { id, message },
        LogUpdate::Ended(message) => ServerMessage::LogEnded { id, message },
    }
}

fn table_messages(id: u32, update: TableUpdate) -> Vec<ServerMessage> {
    let at = update.at;
    match update.change {
        TableChange::Snapshot(table) => snapshot_messages(id, at, table, true),
        TableChange::Partial(table) => snapshot_messages(id, at, table, false),
        TableChange::Rows { rows, complete } => rows_messages(id, rows, complete),
        TableChange::Delta(delta) => vec![ServerMessage::Delta { id, at, delta }],
        TableChange::Problem(message) => vec![ServerMessage::Problem { id, message }],
        TableChange::Ended(message) => vec![ServerMessage::Refused { id, message }],
    }
}

/// A table (whole if `complete`), its first rows in namespace and name order first: a
/// large one in parts, so the page shows its first rows before the rest is encoded.
fn snapshot_messages(
    id: u32,
    at: Position,
    mut table: TableSnapshot,
    complete: bool,
) -> Vec<ServerMessage> {
    if table.rows.len() <= FIRST_PART {
        return vec![ServerMessage::Snapshot {
            id,
            at,
            table,
            complete,
        }];
    }
    // Only the first part needs the table's order (the page sorts anyway):
    // selecting it is linear, sorting 50,000 rows is not.
    let order = |a: &Arc<Row>, b: &Arc<Row>| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name));
    table.rows.select_nth_unstable_by(FIRST_PART, order);
    let rest = table.rows.split_off(FIRST_PART);
    table.rows.sort_unstable_by(order);
    let mut messages = vec![ServerMessage::Snapshot {
        id,
        at,
        table,
        complete: false,
    }];
    messages.extend(rows_messages(id, rest, complete));
    messages
}

/// Rows of a table begun by a snapshot, [`LATER_PART`] a message; the last says
/// whether the table is now whole.
fn rows_messages(id: u32, rows: Vec<Arc<Row>>, complete: bool) -> Vec<ServerMessage> {
    let parts = rows.len().div_ceil(LATER_PART).max(1);
    let mut rows = rows.into_iter();
    (0..parts)
        .map(|part| ServerMessage::Rows {
            id,
            rows: rows.by_ref().take(LATER_PART).collect(),
            complete: complete && part + 1 == parts,
        })
        .collect()
}
