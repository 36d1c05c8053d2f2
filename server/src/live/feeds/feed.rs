//! One upstream watch and the table it keeps: list, then watch from the list's
//! resourceVersion; re-watch after timeouts and transport errors, relist after 410
//! Gone or a change of printer columns. Every change is numbered and broadcast while
//! the state's write lock is held, and recent changes are kept so a viewer that
//! reconnects receives only what it missed.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use backon::BackoffBuilder;
use futures::StreamExt;
use kube::core::WatchEvent;
use portico_core::table::wire::{Column, Row, TableDelta, TableQuery, TableSnapshot};
use tokio::sync::{Semaphore, broadcast};

use crate::cluster::error::Failure;
use crate::live::budgets::memory::{Footprint, MemoryBudget};
use crate::live::feeds::coalesce::Coalescer;
use crate::live::rows::history::History;
use crate::live::rows::intern::Interner;
use crate::live::rows::table_rows::TableRows;
use crate::live::upstream::source::FeedSource;
use crate::live::upstream::table_api::{RawTable, TableError};

/// How many messages a viewer may fall behind before it catches up from the
/// feed's history instead (a slow viewer never holds up the feed or other viewers).
/// Every feed allocates its queue up front, so it is kept short: falling behind it
/// costs little, as the history is shared by every viewer of the feed.
pub(crate) const VIEWER_QUEUE: usize = 64;
/// What a feed holds of its own besides its rows and history: its viewers' queue
/// (about 64 bytes a slot), its state and task.
const FEED_BYTES: usize = VIEWER_QUEUE * 64 + 2048;
/// A change's slot in a feed's history: a pointer. Counted as the feed's own though
/// feeds that saw the same changes share it (the safe side of the overall bound).
const HISTORY_SLOT: usize = 8;
/// The first page of a list, small so that its first rows show at once (what
/// `kubectl get` asks for per page), and the pages after it.
const FIRST_PAGE: usize = 500;
const LATER_PAGES: usize = 5000;
/// The pages after the first of a table with added columns, which lists whole objects
/// (each up to the API server's 1.5 MB; a Table row of metadata is well under 1 KB):
/// a page is parsed before the memory budget charges its rows, so it stays small.
const LATER_WHOLE_OBJECT_PAGES: usize = 500;
/// Later pages read at once, all feeds together.
pub(crate) const LATER_PAGES_AT_ONCE: usize = 4;
const RETRY_MIN: Duration = Duration::from_millis(200);
const RETRY_MAX: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub enum FeedEvent {
    /// The table was (re)listed: take a fresh snapshot.
    Reset,
    /// One watch event's change, the same copy every feed that saw it holds.
    Delta(Arc<TableDelta>),
    /// More rows of the first list, which the reset began; `complete` on its last page.
    Rows {
        rows: Arc<[Arc<Row>]>,
        complete: bool,
    },
    /// The feed cannot serve this query (forbidden, unknown resource); a sentence.
    Problem(String),
}

/// Sent to a feed's viewers by value: a number and a shared change, no allocation of
/// its own (a thousand feeds each keep [`VIEWER_QUEUE`] of them).
#[derive(Debug, Clone)]
pub struct FeedMessage {
    pub seq: u64,
    pub event: FeedEvent,
}

#[derive(Default)]
pub(crate) struct FeedState {
    pub seq: u64,
    pub listed: bool,
    /// Every page of the list has arrived (only the first list comes in pages).
    pub complete: bool,
    pub problem: Option<String>,
    /// The feed stopped for good (its credentials were refused): viewers end too.
    pub ended: bool,
    pub columns: Vec<Column>,
    /// The rows, one per object: a table shared with every feed that holds the same.
    rows: Arc<TableRows>,
    pub resource_version: String,
    /// The latest changes, oldest first: the last `history.len()` sequence numbers up
    /// to `seq` (a relist or a problem clears it); shared with every feed that saw
    /// the same.
    history: Arc<History>,
    /// What the budget was last told.
    counted: Footprint,
}

impl FeedState {
    /// Adds a page of a list.
    fn add_rows(&mut self, rows: &[Arc<Row>], shared: &Interner) {
        let all = self.rows.iter().chain(rows).cloned().collect();
        self.replace_rows(all, shared);
    }

    fn replace_rows(&mut self, rows: Vec<Arc<Row>>, shared: &Interner) {
        let table = shared.table(rows);
        shared.release(std::mem::replace(&mut self.rows, table));
    }

    /// Applies a watch event's change (what the feed publishes).
    fn apply(&mut self, change: &Arc<TableDelta>, shared: &Interner) {
        let rows = std::mem::replace(&mut self.rows, TableRows::empty());
        self.rows = shared.apply(rows, change);
    }

    fn remember(&mut self, change: &Arc<TableDelta>, shared: &Interner) {
        let history = std::mem::replace(&mut self.history, History::empty());
        self.history = shared.remember(history, change);
    }

    /// A relist or a problem: what came before no longer adds up to the table. The
    /// empty history is the feed's own (see [`History::empty`]).
    fn forget_history(&mut self) {
        self.history = Arc::default();
    }

    /// The feed's bytes now: its rows and history as if unshared, and its own.
    fn measure(&self) -> Footprint {
        Footprint {
            logical: self.rows.bytes() + self.history.bytes(),
            owned: FEED_BYTES + self.history.len() * HISTORY_SLOT,
        }
    }

    pub fn snapshot(&self) -> TableSnapshot {
        TableSnapshot {
            columns: self.columns.clone(),
            rows: self.rows.to_vec(),
            resource_version: self.resource_version.clone(),
        }
    }

    /// Merges the deltas after `seen` into `into` until it changes `rows` rows or the
    /// history ends; the sequence number that brings a viewer to, and whether the
    /// history ended there. `None` if the history no longer holds all of them.
    pub fn missed_since(
        &self,
        seen: u64,
        into: &mut Coalescer,
        rows: usize,
    ) -> Option<(u64, bool)> {
        let current = self.listed && self.complete && self.problem.is_none();
        let from = self.seq - self.history.len() as u64;
        if !current || seen < from || seen > self.seq {
            return None;
        }
        let skip = usize::try_from(seen - from).unwrap_or(usize::MAX);
        let mut reached = seen;
        for delta in self.history.iter().skip(skip) {
            if into.rows() >= rows {
                break;
            }
            into.push(delta);
            reached += 1;
        }
        Some((reached, reached == self.seq))
    }
}

/// What a viewer sees when it (re)synchronises.
pub enum Current {
    /// The first list has not arrived yet; a [`FeedEvent::Reset`] will follow.
    Pending,
    /// The table, whole or (while its first list arrives in pages) its rows so far.
    Table {
        table: TableSnapshot,
        complete: bool,
    },
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
    pub tx: broadcast::Sender<FeedMessage>,
    pub viewers: AtomicUsize,
    pub task: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Where the feed's bytes are counted.
    memory: Arc<MemoryBudget>,
    /// Where its rows and changes are shared with other feeds.
    shared: Arc<Interner>,
    /// Permits for the pages after a list's first, shared by every feed.
    later_pages: Arc<Semaphore>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        let rows = std::mem::replace(&mut self.write().rows, TableRows::empty());
        self.shared.release(rows);
        let counted = self.read().counted;
        let _ = self
            .memory
            .resize(&self.person, counted, Footprint::default());
    }
}

impl Feed {
    pub fn new(
        person: Option<String>,
        memory: Arc<MemoryBudget>,
        later_pages: Arc<Semaphore>,
    ) -> Self {
        Self {
            id: fresh_id(),
            later_pages,
            shared: memory.interner().clone(),
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

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, FeedState> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a change and broadcasts it atomically with respect to snapshots.
    fn publish(&self, change: impl FnOnce(&mut FeedState) -> Option<FeedEvent>) {
        let mut state = self.write();
        // An ended feed holds nothing and tells nothing more (its task is stopping).
        if state.ended {
            return;
        }
        let Some(event) = change(&mut state) else {
            return;
        };
        state.seq += 1;
        if let FeedEvent::Delta(delta) = &event {
            state.remember(delta, &self.shared);
        } else {
            // A relist or a problem: what came before no longer adds up to the table.
            state.forget_history();
        }
        let message = FeedMessage {
            seq: state.seq,
            event,
        };
        // No receivers is fine: the state still advances for the next viewer.
        let _ = self.tx.send(message);
        let bytes = state.measure();
        let counted = std::mem::replace(&mut state.counted, bytes);
        if let Err(refused) = self.memory.resize(&self.person, counted, bytes) {
            // Past the person's (or everyone's) bound: the feed ends and frees it all.
            tracing::info!(bytes = bytes.logical, %refused, "a live list outgrew the memory budget");
            self.shared
                .release(std::mem::replace(&mut state.rows, TableRows::empty()));
            state.forget_history();
            let _ = self
                .memory
                .resize(&self.person, bytes, Footprint::default());
            state.counted = Footprint::default();
            let sentence = refused.to_string();
            state.problem = Some(sentence.clone());
            state.ended = true;
            state.seq += 1;
            let _ = self.tx.send(FeedMessage {
                seq: state.seq,
                event: FeedEvent::Problem(sentence),
            });
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
            (None, true) => Current::Table {
                table: state.snapshot(),
                complete: state.complete,
            },
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
    // Only the feed's first list is shown as it arrives: a relist replaces a table
    // viewers already hold, so it is published once whole.
    let mut first_list = true;
    'relist: loop {
        let why = if first_list { "first" } else { "relist" };
        let resource = crate::portal_metrics::resource_label(&query.group, &query.plural);
        crate::portal_metrics::PORTAL.listed(resource, why);
        match list(source.as_ref(), &query, &feed, first_list).await {
            Listing::Whole => first_list = false,
            Listing::Failed => {
                retry.wait().await;
                continue 'relist;
            }
            Listing::Stop => return,
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
                        if column_change(source.as_ref(), &query, &f, &t) {
                            tracing::info!("printer columns changed; relisting");
                            continue 'relist;
                        }
                        f.publish(|s| upsert(s, t, &f.shared));
                        if f.has_ended() {
                            return;
                        }
                    }
                    Ok(WatchEvent::Deleted(t)) => {
                        f.publish(|s| delete(s, t, &f.shared));
                        if f.has_ended() {
                            return;
                        }
                    }
                    Ok(WatchEvent::Bookmark(b)) => {
                        // No message: viewers only need the version with the next change.
                        let mut s = f.write();
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
                    // The same event would come again at once: not in a tight loop.
                    Err(TableError::Decode) => {
                        tracing::warn!("an unreadable watch event; re-watching");
                        retry.wait().await;
                        break;
                    }
                    Err(error) => {
                        tracing::warn!(?error, "watch stream broke; re-watching");
                        break;
                    }
                }
            }
        }
    }
}

/// How a list ended.
enum Listing {
    /// Every page is in the feed.
    Whole,
    /// It failed (the feed says why if the API server refused); list again.
    Failed,
    /// The feed is gone, or ended for good.
    Stop,
}

/// Lists `query` into the feed page by page: the first page small, so that it
/// shows at once. With `in_parts` (the feed's first list) each page is published as
/// it arrives; otherwise (a relist) viewers keep the table they hold until the new
/// one is whole, its columns and version with it.
async fn list(
    source: &dyn FeedSource,
    query: &TableQuery,
    feed: &Weak<Feed>,
    in_parts: bool,
) -> Listing {
    let mut from: Option<String> = None;
    let mut listed: Vec<Arc<Row>> = Vec::new();
    let mut head = None;
    let mut pages = 0;
    loop {
        // A first page is small and goes at once; the big pages after it wait
        // their turn, which bounds what lists in flight hold while they are read.
        let (limit, permits) = if pages == 0 {
            (FIRST_PAGE, None)
        } else {
            let Some(permits) = feed.upgrade().map(|f| f.later_pages.clone()) else {
                return Listing::Stop;
            };
            let limit = if query.added_columns().is_empty() {
                LATER_PAGES
            } else {
                LATER_WHOLE_OBJECT_PAGES
            };
            (limit, Some(permits))
        };
        let permit = match &permits {
            Some(permits) => permits.acquire().await.ok(),
            None => None,
        };
        let page = source.list(query, limit, from.as_deref()).await;
        drop(permit);
        let page = match page {
            Ok(page) => page,
            Err(error) => return list_failed(feed, &error),
        };
        let Some(f) = feed.upgrade() else {
            return Listing::Stop;
        };
        let complete = page.next.is_none();
        let table = page.table;
        let rows: Vec<Arc<Row>> = table
            .rows
            .into_iter()
            .map(|row| shared_row(&f, row))
            .collect();
        if pages == 0 && (in_parts || complete) {
            f.publish(|s| {
                s.problem = None;
                s.listed = true;
                s.complete = complete;
                s.columns = table.columns;
                s.resource_version = table.resource_version;
                s.replace_rows(rows, &f.shared);
                Some(FeedEvent::Reset)
            });
        } else if in_parts {
            let rows: Arc<[Arc<Row>]> = rows.into();
            f.publish(|s| {
                s.add_rows(&rows, &f.shared);
                s.complete = complete;
                Some(FeedEvent::Rows { rows, complete })
            });
        } else {
            if pages == 0 {
                head = Some((table.columns, table.resource_version));
            }
            listed.extend(rows);
            if complete && let Some((columns, resource_version)) = head.take() {
                f.publish(|s| {
                    s.problem = None;
                    s.complete = true;
                    s.columns = columns;
                    s.resource_version = resource_version;
                    s.replace_rows(std::mem::take(&mut listed), &f.shared);
                    Some(FeedEvent::Reset)
                });
            }
        }
        if f.has_ended() {
            return Listing::Stop;
        }
        pages += 1;
        match page.next {
            Some(next) => from = Some(next),
            None => {
                tracing::debug!(
                    rows = f.read().rows.len(),
                    shared_rows = f.shared.rows(),
                    shared_bytes = f.shared.bytes(),
                    "listed"
                );
                return Listing::Whole;
            }
        }
    }
}

/// A list failed: the feed says why if the API server refused, and ends for good
/// if it refused the credentials themselves.
fn list_failed(feed: &Weak<Feed>, error: &TableError) -> Listing {
    let Some(f) = feed.upgrade() else {
        return Listing::Stop;
    };
    if let TableError::Rejected(r) = error {
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
            // Retrying with credentials the API server refuses only hammers it; a
            // viewer who regains access opens a new feed.
            tracing::info!(%error, "credentials refused; the feed ends");
            return Listing::Stop;
        }
    }
    // A continue token that expired (410) starts the list again too.
    tracing::warn!(%error, "listing failed; retrying");
    Listing::Failed
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
                // Feeds that failed together (an API server restart) retry apart.
                .with_jitter()
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
fn column_change(
    source: &dyn FeedSource,
    query: &TableQuery,
    feed: &Feed,
    table: &RawTable,
) -> bool {
    !table.columns().is_empty()
        && feed.read().columns != source.read_columns(query, table.columns())
}

/// A listed row as the shared copy (a list's rows are `Arc`s of their own until then).
fn shared_row(feed: &Feed, row: Arc<Row>) -> Arc<Row> {
    feed.shared.row(Arc::unwrap_or_clone(row))
}

fn upsert(state: &mut FeedState, table: RawTable, shared: &Interner) -> Option<FeedEvent> {
    let rows: Vec<Arc<Row>> = table
        .into_rows(&state.columns)
        .into_iter()
        .map(|r| shared.row(r))
        .collect();
    let last = rows.last()?.resource_version.clone();
    apply_change(state, shared, rows, vec![], last)
}

fn delete(state: &mut FeedState, table: RawTable, shared: &Interner) -> Option<FeedEvent> {
    let rows = table.into_rows(&state.columns);
    let last = rows.last()?.resource_version.clone();
    let deletes: Vec<String> = rows.into_iter().map(|r| r.uid).collect();
    apply_change(state, shared, vec![], deletes, last)
}

/// A watch event's change, shared, applied to the feed's rows: the same change to
/// the same rows as other feeds' is applied once for all of them.
fn apply_change(
    state: &mut FeedState,
    shared: &Interner,
    upserts: Vec<Arc<Row>>,
    deletes: Vec<String>,
    resource_version: String,
) -> Option<FeedEvent> {
    let change = shared.delta(TableDelta {
        upserts,
        deletes,
        resource_version,
    });
    state.apply(&change, shared);
    state.resource_version = change.resource_version.clone();
    Some(FeedEvent::Delta(change))
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
        let doubling = [200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000, 10_000];
        // Each with up to as much again at random, so feeds that failed together
        // retry apart.
        for (wait, least) in millis.iter().zip(doubling) {
            assert!((least..=2 * least).contains(wait), "{millis:?}");
        }
        let again: Vec<u128> = Backoff::default()
            .0
            .take(9)
            .map(|d| d.as_millis())
            .collect();
        assert_ne!(millis, again, "two feeds' waits differ");
    }
}
