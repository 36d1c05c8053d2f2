//! One upstream watch and the table it keeps: list, then watch from the list's
//! resourceVersion; re-watch after timeouts and transport errors, relist after 410
//! Gone or a change of printer columns. Every change is numbered and broadcast while
//! the state's write lock is held, and recent changes are kept so a viewer that
//! reconnects receives only what it missed.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use futures::StreamExt;
use kube::core::WatchEvent;
use portico_core::table::wire::{Column, Row, TableDelta, TableQuery, TableSnapshot};
use tokio::sync::broadcast;

use super::memory::{MemoryBudget, delta_bytes, row_bytes};
use super::source::FeedSource;
use super::table_api::{RawTable, TableError};
use crate::cluster::error::Failure;

/// How many messages a viewer may fall behind before it is resynchronised with a
/// fresh snapshot instead (a slow viewer never holds up the feed or other viewers).
pub(crate) const VIEWER_QUEUE: usize = 1024;
/// How many recent changes a feed keeps for viewers that reconnect. A viewer further
/// behind (or behind a relist) gets a snapshot.
pub(crate) const HISTORY: usize = 4096;
/// And at most this many bytes of them (a feed of big rows keeps fewer).
const HISTORY_BYTES: usize = 4 << 20;
const RETRY_MIN: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub enum FeedEvent {
    /// The table was (re)listed: take a fresh snapshot.
    Reset,
    Delta(TableDelta),
    /// The feed cannot serve this query (forbidden, unknown resource); a sentence.
    Problem(String),
}

#[derive(Debug, Clone)]
pub struct FeedMessage {
    pub seq: u64,
    pub event: FeedEvent,
}

#[derive(Default)]
pub(crate) struct FeedState {
    pub seq: u64,
    pub listed: bool,
    pub problem: Option<String>,
    /// The feed stopped for good (its credentials were refused): viewers end too.
    pub ended: bool,
    pub columns: Vec<Column>,
    pub rows: HashMap<String, Row>,
    pub resource_version: String,
    /// The latest deltas, oldest first, all numbered above `history_from`.
    history: VecDeque<Arc<FeedMessage>>,
    /// A viewer that has seen up to this sequence number (or later) can be brought
    /// up to date from `history` alone.
    history_from: u64,
    /// About how many bytes `rows` and `history` take, and what the memory budget
    /// was last told.
    row_bytes: usize,
    history_bytes: usize,
    counted: usize,
}

impl FeedState {
    fn put_row(&mut self, row: Row) {
        self.row_bytes += row_bytes(&row);
        if let Some(old) = self.rows.insert(row.uid.clone(), row) {
            self.row_bytes = self.row_bytes.saturating_sub(row_bytes(&old));
        }
    }

    fn remove_row(&mut self, uid: &str) {
        if let Some(old) = self.rows.remove(uid) {
            self.row_bytes = self.row_bytes.saturating_sub(row_bytes(&old));
        }
    }

    fn replace_rows(&mut self, rows: Vec<Row>) {
        self.rows.clear();
        self.row_bytes = 0;
        for row in rows {
            self.put_row(row);
        }
    }

    fn remember(&mut self, message: Arc<FeedMessage>) {
        if let FeedEvent::Delta(d) = &message.event {
            self.history_bytes += delta_bytes(d);
        }
        self.history.push_back(message);
        while self.history.len() > HISTORY
            || (self.history_bytes > HISTORY_BYTES && self.history.len() > 1)
        {
            let Some(oldest) = self.history.pop_front() else {
                break;
            };
            if let FeedEvent::Delta(d) = &oldest.event {
                self.history_bytes = self.history_bytes.saturating_sub(delta_bytes(d));
            }
            self.history_from = oldest.seq;
        }
    }

    fn forget_history(&mut self) {
        self.history.clear();
        self.history_bytes = 0;
        self.history_from = self.seq;
    }

    pub fn snapshot(&self) -> TableSnapshot {
        TableSnapshot {
            columns: self.columns.clone(),
            rows: self.rows.values().cloned().collect(),
            resource_version: self.resource_version.clone(),
        }
    }

    /// The deltas after `seen`, if the history still holds all of them.
    pub fn missed_since(&self, seen: u64) -> Option<Vec<Arc<FeedMessage>>> {
        let current = self.listed && self.problem.is_none();
        (current && seen >= self.history_from && seen <= self.seq).then(|| {
            self.history
                .iter()
                .filter(|m| m.seq > seen)
                .cloned()
                .collect()
        })
    }
}

/// What a viewer sees when it (re)synchronises.
pub enum Current {
    /// The first list has not arrived yet; a [`FeedEvent::Reset`] will follow.
    Pending,
    Table(TableSnapshot),
    Problem(String),
    /// The feed stopped for good, with the reason.
    Ended(String),
}

pub(crate) struct Feed {
    /// Names this run of the feed in resume positions: a position from another run
    /// (a restarted server, a feed stopped and started again) never matches.
    pub id: String,
    /// Whom the feed counts against (per-person limits).
    pub person: Option<String>,
    pub state: RwLock<FeedState>,
    pub tx: broadcast::Sender<Arc<FeedMessage>>,
    pub viewers: AtomicUsize,
    pub task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Where the feed's bytes are counted.
    memory: Arc<MemoryBudget>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        let counted = self.read().counted;
        let _ = self.memory.resize(&self.person, counted, 0);
    }
}

impl Feed {
    pub fn new(person: Option<String>, memory: Arc<MemoryBudget>) -> Self {
        Self {
            id: fresh_id(),
            memory,
            person,
            state: RwLock::new(FeedState::default()),
            tx: broadcast::channel(VIEWER_QUEUE).0,
            viewers: AtomicUsize::new(0),
            task: Mutex::new(None),
        }
    }

    pub fn read(&self) -> std::sync::RwLockReadGuard<'_, FeedState> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a change and broadcasts it atomically with respect to snapshots.
    fn publish(&self, change: impl FnOnce(&mut FeedState) -> Option<FeedEvent>) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        // An ended feed holds nothing and tells nothing more (its task is stopping).
        if state.ended {
            return;
        }
        let Some(event) = change(&mut state) else {
            return;
        };
        state.seq += 1;
        let message = Arc::new(FeedMessage {
            seq: state.seq,
            event,
        });
        if matches!(message.event, FeedEvent::Delta(_)) {
            state.remember(message.clone());
        } else {
            // A relist or a problem: what came before no longer adds up to the table.
            state.forget_history();
        }
        // No receivers is fine: the state still advances for the next viewer.
        let _ = self.tx.send(message);
        let bytes = state.row_bytes + state.history_bytes;
        let counted = std::mem::replace(&mut state.counted, bytes);
        if let Err(refused) = self.memory.resize(&self.person, counted, bytes) {
            // Past the person's (or everyone's) bound: the feed ends and frees it all.
            tracing::info!(bytes, %refused, "a live list outgrew the memory budget");
            state.replace_rows(Vec::new());
            state.forget_history();
            let _ = self.memory.resize(&self.person, bytes, 0);
            state.counted = 0;
            let sentence = refused.to_string();
            state.problem = Some(sentence.clone());
            state.ended = true;
            state.seq += 1;
            let _ = self.tx.send(Arc::new(FeedMessage {
                seq: state.seq,
                event: FeedEvent::Problem(sentence),
            }));
        }
    }

    pub fn has_ended(&self) -> bool {
        self.read().ended
    }

    pub fn stop(&self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }

    pub fn current(&self) -> (Current, u64) {
        let state = self.read();
        let current = match (&state.problem, state.listed) {
            (Some(p), _) if state.ended => Current::Ended(p.clone()),
            (Some(p), _) => Current::Problem(p.clone()),
            (None, true) => Current::Table(state.snapshot()),
            (None, false) => Current::Pending,
        };
        (current, state.seq)
    }
}

/// 64 random bits, hex: unguessable, so one viewer cannot probe another's feeds.
fn fresh_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 8];
    // SystemRandom fails only without an OS random source; a fixed id then still
    // works (resuming across runs falls back to a snapshot only if ids differ).
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The feed's life. Ends when the feed is dropped, or for good when the API server
/// refuses its credentials.
pub(crate) async fn run(source: Arc<dyn FeedSource>, query: TableQuery, feed: Weak<Feed>) {
    let mut retry = Backoff::default();
    'relist: loop {
        let snapshot = match source.list(&query).await {
            Ok(s) => s,
            Err(error) => {
                let Some(f) = feed.upgrade() else { return };
                if let TableError::Rejected(r) = &error {
                    let message = problem_sentence(r);
                    let refused = is_refusal(r);
                    f.publish(|s| {
                        (s.problem.as_ref() != Some(&message) || refused).then(|| {
                            s.problem = Some(message.clone());
                            s.ended = refused;
                            FeedEvent::Problem(message)
                        })
                    });
                    if refused {
                        // Retrying with credentials the API server refuses only
                        // hammers it; a viewer who regains access opens a new feed.
                        tracing::info!(%error, "credentials refused; the feed ends");
                        return;
                    }
                }
                drop(f);
                tracing::warn!(%error, "listing failed; retrying");
                retry.wait().await;
                continue 'relist;
            }
        };
        {
            let Some(f) = feed.upgrade() else { return };
            f.publish(|s| {
                s.problem = None;
                s.listed = true;
                s.columns = snapshot.columns;
                s.resource_version = snapshot.resource_version;
                s.replace_rows(snapshot.rows);
                Some(FeedEvent::Reset)
            });
            if f.has_ended() {
                return;
            }
        }
        loop {
            let Some(rv) = feed.upgrade().map(|f| f.read().resource_version.clone()) else {
                return;
            };
            let mut events = match source.watch(&query, &rv).await {
                Ok(events) => events,
                Err(TableError::Gone) => continue 'relist,
                // A watch refused (access revoked, token expired): list again, which
                // ends the feed with the API server's own words if it is refused too.
                Err(TableError::Rejected(r)) if is_refusal(&r) => {
                    retry.wait().await;
                    continue 'relist;
                }
                Err(error) => {
                    tracing::warn!(%error, "watch failed; retrying");
                    retry.wait().await;
                    continue;
                }
            };
            while let Some(event) = events.next().await {
                let Some(f) = feed.upgrade() else { return };
                match event {
                    Ok(WatchEvent::Added(t)) | Ok(WatchEvent::Modified(t)) => {
                        retry = Backoff::default();
                        if column_change(&f, &t) {
                            tracing::info!("printer columns changed; relisting");
                            continue 'relist;
                        }
                        f.publish(|s| upsert(s, t));
                        if f.has_ended() {
                            return;
                        }
                    }
                    Ok(WatchEvent::Deleted(t)) => {
                        f.publish(|s| delete(s, t));
                        if f.has_ended() {
                            return;
                        }
                    }
                    Ok(WatchEvent::Bookmark(b)) => {
                        // No message: viewers only need the version with the next change.
                        let mut s = f.state.write().unwrap_or_else(|e| e.into_inner());
                        s.resource_version = b.metadata.resource_version;
                    }
                    Ok(WatchEvent::Error(status))
                        if Failure::of_status(status.code, &status.reason) == Failure::Gone =>
                    {
                        continue 'relist;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        tracing::warn!(message = %status.message, "watch error event; re-watching");
                        break;
                    }
                    Err(TableError::Gone) => continue 'relist,
                    Err(error) => {
                        tracing::warn!(?error, "watch stream broke; re-watching");
                        break;
                    }
                }
            }
        }
    }
}

/// Waits that double from [`RETRY_MIN`] up to [`RETRY_MAX`], for ever; started afresh
/// once the watch delivers again.
struct Backoff(backon::ExponentialBackoff);

impl Default for Backoff {
    fn default() -> Self {
        Self(
            backon::ExponentialBuilder::new()
                .with_min_delay(RETRY_MIN)
                .with_max_delay(RETRY_MAX)
                .with_factor(2.0)
                .without_max_times()
                .build(),
        )
    }
}

impl Backoff {
    async fn wait(&mut self) {
        tokio::time::sleep(self.0.next().unwrap_or(RETRY_MAX)).await;
    }
}

/// A CRD's printer columns can change under a running watch; a relist brings them in.
fn column_change(feed: &Feed, table: &RawTable) -> bool {
    !table.columns().is_empty() && feed.read().columns != table.columns()
}

fn upsert(state: &mut FeedState, table: RawTable) -> Option<FeedEvent> {
    let rows = table.into_rows();
    let last = rows.last()?.resource_version.clone();
    for row in &rows {
        state.put_row(row.clone());
    }
    state.resource_version = last.clone();
    Some(FeedEvent::Delta(TableDelta {
        upserts: rows,
        deletes: vec![],
        resource_version: last,
    }))
}

fn delete(state: &mut FeedState, table: RawTable) -> Option<FeedEvent> {
    let rows = table.into_rows();
    let last = rows.last()?.resource_version.clone();
    let deletes: Vec<String> = rows.into_iter().map(|r| r.uid).collect();
    for uid in &deletes {
        state.remove_row(uid);
    }
    state.resource_version = last.clone();
    Some(FeedEvent::Delta(TableDelta {
        upserts: vec![],
        deletes,
        resource_version: last,
    }))
}

/// Whether the API server refused the credentials themselves or what they may do.
fn is_refusal(r: &portico_core::payload::ApiRejection) -> bool {
    matches!(Failure::of(r), Failure::Unauthorized | Failure::Forbidden)
}

fn problem_sentence(r: &portico_core::payload::ApiRejection) -> String {
    match Failure::of(r) {
        Failure::Unauthorized => {
            "The API server no longer accepts your sign-in: sign in again.".into()
        }
        Failure::Forbidden => format!("You may not list this resource here: {}", r.message),
        Failure::NotFound => {
            "The API server does not serve this resource (was its CRD removed?).".into()
        }
        _ => r.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_waits_double_from_the_least_to_the_most_and_stay_there() {
        let Backoff(waits) = Backoff::default();
        let millis: Vec<u128> = waits.take(9).map(|d| d.as_millis()).collect();
        assert_eq!(
            millis,
            [200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000, 10_000]
        );
    }
}
