//! The watch hub: one upstream Table watch per [`TableQuery`], shared by every viewer
//! of that query and reference-counted; stopped a grace period after its last viewer
//! leaves.
//!
//! Consistency: the feed task changes its state and broadcasts the change while
//! holding the state's write lock, and messages carry a sequence number. A viewer
//! copies the state and subscribes under the read lock, so it sees every change after
//! its copy exactly once and can skip any message its copy already contains.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use app::table::model::{Row, TableDelta, TableQuery, TableSnapshot};
use futures::StreamExt;
use kube::core::WatchEvent;
use tokio::sync::broadcast;

use super::limits::LimitRefused;
use super::table_api::{self, RawTable, TableError};
use crate::kube::error::Failure;
use tracing::Instrument;

/// How many messages a viewer may fall behind before it is resynchronised with a
/// fresh snapshot instead (a slow viewer never holds up the feed or other viewers).
const VIEWER_QUEUE: usize = 1024;
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
struct FeedState {
    seq: u64,
    listed: bool,
    problem: Option<String>,
    /// The feed stopped for good (its credentials were refused): viewers end too.
    ended: bool,
    columns: Vec<app::table::model::Column>,
    rows: HashMap<String, Row>,
    resource_version: String,
}

impl FeedState {
    fn snapshot(&self) -> TableSnapshot {
        TableSnapshot {
            columns: self.columns.clone(),
            rows: self.rows.values().cloned().collect(),
            resource_version: self.resource_version.clone(),
        }
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

struct Feed {
    /// Whom the feed counts against (per-person limits).
    person: Option<String>,
    state: RwLock<FeedState>,
    tx: broadcast::Sender<Arc<FeedMessage>>,
    viewers: AtomicUsize,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Feed {
    /// Applies a change and broadcasts it atomically with respect to snapshots.
    fn publish(&self, change: impl FnOnce(&mut FeedState) -> Option<FeedEvent>) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        if let Some(event) = change(&mut state) {
            state.seq += 1;
            // No receivers is fine: the state still advances for the next viewer.
            let _ = self.tx.send(Arc::new(FeedMessage {
                seq: state.seq,
                event,
            }));
        }
    }

    fn has_ended(&self) -> bool {
        self.state.read().unwrap_or_else(|e| e.into_inner()).ended
    }

    fn stop(&self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }

    fn current(&self) -> (Current, u64) {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let current = match (&state.problem, state.listed) {
            (Some(p), _) if state.ended => Current::Ended(p.clone()),
            (Some(p), _) => Current::Problem(p.clone()),
            (None, true) => Current::Table(state.snapshot()),
            (None, false) => Current::Pending,
        };
        (current, state.seq)
    }
}

struct HubInner {
    client: kube::Client,
    feeds: Mutex<HashMap<FeedKey, Arc<Feed>>>,
    grace: Duration,
    /// Feeds one identity may run (lingering ones included), and all together.
    feeds_per_owner: usize,
    feeds_overall: usize,
    /// The number of running feeds, published for tests, benchmarks and metrics.
    feed_count: tokio::sync::watch::Sender<usize>,
}

/// A feed is shared by viewers of the same query acting with the same identity
/// (`None`: the hub's own client). Keeping identities apart means a feed never runs
/// on credentials that expired or were revoked for someone else.
type FeedKey = (Option<String>, TableQuery);

/// Cheap to clone; all clones share the feeds.
#[derive(Clone)]
pub struct WatchHub {
    inner: Arc<HubInner>,
}

impl WatchHub {
    pub fn new(client: kube::Client, grace: Duration) -> Self {
        Self::with_limits(client, grace, usize::MAX, usize::MAX)
    }

    /// A hub starting at most `per_owner` feeds for one identity and `overall` in all.
    pub fn with_limits(
        client: kube::Client,
        grace: Duration,
        per_owner: usize,
        overall: usize,
    ) -> Self {
        Self {
            inner: Arc::new(HubInner {
                client,
                feeds: Mutex::new(HashMap::new()),
                grace,
                feeds_per_owner: per_owner,
                feeds_overall: overall,
                feed_count: tokio::sync::watch::channel(0).0,
            }),
        }
    }

    /// Number of upstream watches currently running.
    pub fn upstream_watches(&self) -> usize {
        self.inner
            .feeds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Waits until exactly `n` upstream watches run; false after `timeout`.
    pub async fn wait_upstream_watches(&self, n: usize, timeout: Duration) -> bool {
        let mut count = self.inner.feed_count.subscribe();
        tokio::time::timeout(timeout, count.wait_for(|c| *c == n))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Joins (or starts) the feed for `query`, as the hub's own client.
    pub fn subscribe(&self, query: TableQuery) -> Result<Subscription, LimitRefused> {
        let client = self.inner.client.clone();
        self.subscribe_as(query, &client, None, None)
    }

    /// Joins the feed for `query`, or starts it with `client`. Callers check that the
    /// viewer may watch the resource first: a running feed serves whoever joins it.
    /// `owner` names the identity `client` acts with (see [`FeedKey`]).
    /// `person` is whom a new feed counts against.
    #[tracing::instrument(
        skip_all,
        fields(caller = person.as_deref().unwrap_or("portal"), resource = %describe(&query)),
        err(Display)
    )]
    pub fn subscribe_as(
        &self,
        query: TableQuery,
        client: &kube::Client,
        owner: Option<String>,
        person: Option<String>,
    ) -> Result<Subscription, LimitRefused> {
        let key: FeedKey = (owner, query);
        let feed = self.join_or_start(&key, client, person)?;
        Ok(self.subscription(key, feed))
    }

    /// The running feed for `key` with one more viewer, or a new one if the limits
    /// allow. A feed that ended (refused credentials) is replaced: the permission may
    /// be back.
    fn join_or_start(
        &self,
        key: &FeedKey,
        client: &kube::Client,
        person: Option<String>,
    ) -> Result<Arc<Feed>, LimitRefused> {
        let mut feeds = self.inner.feeds.lock().unwrap_or_else(|e| e.into_inner());
        let running = feeds.get(key).filter(|f| !f.has_ended()).cloned();
        let feed = match running {
            Some(feed) => feed,
            None => {
                let (per_owner, overall) = (self.inner.feeds_per_owner, self.inner.feeds_overall);
                if feeds.len() >= overall {
                    return Err(LimitRefused::FeedsOverall(overall));
                }
                if feeds.values().filter(|f| f.person == person).count() >= per_owner {
                    return Err(LimitRefused::FeedsPerPerson(per_owner));
                }
                let feed = start_feed(client.clone(), key.1.clone(), person);
                if let Some(old) = feeds.insert(key.clone(), feed.clone()) {
                    old.stop();
                }
                feed
            }
        };
        feed.viewers.fetch_add(1, Ordering::AcqRel);
        self.inner.feed_count.send_replace(feeds.len());
        Ok(feed)
    }

    fn subscription(&self, key: FeedKey, feed: Arc<Feed>) -> Subscription {
        // Subscribe before copying: whatever is published in between is both in the
        // copy and in the queue, and the sequence number lets the viewer skip it.
        let rx = feed.tx.subscribe();
        let (current, seq) = feed.current();
        Subscription {
            hub: self.clone(),
            key,
            feed,
            rx,
            initial: Some((current, seq)),
        }
    }
}

/// A feed's resource for logs: `plural.group/version`, and its namespace.
fn describe(query: &TableQuery) -> String {
    let scope = query.namespace.as_deref().unwrap_or("all namespaces");
    format!(
        "{}.{}/{} in {scope}",
        query.plural, query.group, query.version
    )
}

fn start_feed(client: kube::Client, query: TableQuery, person: Option<String>) -> Arc<Feed> {
    let (tx, _) = broadcast::channel(VIEWER_QUEUE);
    let feed = Arc::new(Feed {
        person,
        state: RwLock::new(FeedState::default()),
        tx,
        viewers: AtomicUsize::new(0),
        task: Mutex::new(None),
    });
    let span = tracing::info_span!(
        "feed",
        caller = feed.person.as_deref().unwrap_or("portal"),
        resource = %describe(&query),
    );
    let task = tokio::spawn(run_feed(client, query, Arc::downgrade(&feed)).instrument(span));
    *feed.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    feed
}

/// A viewer's membership of a feed. Dropping it releases the viewer.
pub struct Subscription {
    hub: WatchHub,
    key: FeedKey,
    feed: Arc<Feed>,
    rx: broadcast::Receiver<Arc<FeedMessage>>,
    initial: Option<(Current, u64)>,
}

/// What the next read of a subscription yields.
pub enum Next {
    /// Replace the whole table (first message, after a relist, or after falling behind).
    Table(TableSnapshot, u64),
    Problem(String, u64),
    /// The feed stopped for good (the viewer's credentials were refused).
    Ended(String),
    Delta(FeedMessage),
    Closed,
}

impl Subscription {
    /// The next thing to send: the initial state first, then messages in order,
    /// skipping those already contained in the last snapshot.
    pub async fn next(&mut self, seen: u64) -> Next {
        if let Some((current, seq)) = self.initial.take() {
            match current {
                Current::Table(t) => return Next::Table(t, seq),
                Current::Problem(p) => return Next::Problem(p, seq),
                Current::Ended(p) => return Next::Ended(p),
                Current::Pending => {}
            }
        }
        loop {
            match self.rx.recv().await {
                Ok(msg) if msg.seq <= seen => continue,
                Ok(msg) => {
                    return match &msg.event {
                        FeedEvent::Delta(_) => Next::Delta((*msg).clone()),
                        FeedEvent::Reset | FeedEvent::Problem(_) => self.resync(),
                    };
                }
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "viewer fell behind; resynchronising");
                    return self.resync();
                }
                Err(broadcast::error::RecvError::Closed) => return Next::Closed,
            }
        }
    }

    /// A further message already queued, without waiting (for coalescing); `None`
    /// when nothing is queued.
    pub fn try_next_delta(&mut self, seen: u64) -> Option<Queued> {
        loop {
            match self.rx.try_recv() {
                Ok(msg) if msg.seq <= seen => continue,
                Ok(msg) => {
                    return Some(match &msg.event {
                        FeedEvent::Delta(_) => Queued::Delta((*msg).clone()),
                        // Anything else needs a resync; the caller stops coalescing.
                        _ => Queued::Resync,
                    });
                }
                Err(broadcast::error::TryRecvError::Empty) => return None,
                Err(_) => return Some(Queued::Resync),
            }
        }
    }

    /// A fresh copy of the feed's state.
    pub fn resync(&mut self) -> Next {
        // Drop anything queued: the copy below contains it.
        self.rx = self.rx.resubscribe();
        match self.feed.current() {
            (Current::Table(t), seq) => Next::Table(t, seq),
            (Current::Problem(p), seq) => Next::Problem(p, seq),
            (Current::Ended(p), _) => Next::Ended(p),
            // Unreachable after a Reset, but harmless: wait for the next message.
            (Current::Pending, seq) => Next::Table(
                TableSnapshot {
                    columns: vec![],
                    rows: vec![],
                    resource_version: String::new(),
                },
                seq,
            ),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.feed.viewers.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        // Last viewer gone: stop the upstream watch after the grace period unless
        // someone joined meanwhile.
        let hub = self.hub.clone();
        let key = self.key.clone();
        let feed = Arc::downgrade(&self.feed);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            tokio::time::sleep(hub.inner.grace).await;
            let mut feeds = hub.inner.feeds.lock().unwrap_or_else(|e| e.into_inner());
            let Some(current) = feeds.get(&key) else {
                return;
            };
            let same = feed.upgrade().is_some_and(|f| Arc::ptr_eq(&f, current));
            if same && current.viewers.load(Ordering::Acquire) == 0 {
                current.stop();
                feeds.remove(&key);
                hub.inner.feed_count.send_replace(feeds.len());
                tracing::debug!(query = ?key.1, "stopped an idle upstream watch");
            }
        });
    }
}

/// The feed's life: list, then watch from the list's resourceVersion; re-watch after
/// timeouts and transport errors, relist after 410 Gone. Ends when the feed is dropped.
#[tracing::instrument(name = "feed", skip_all, fields(resource = %query.resource().collection_path(query.namespace.as_deref())))]
async fn run_feed(client: kube::Client, query: TableQuery, feed: std::sync::Weak<Feed>) {
    let mut retry = RETRY_MIN;
    'relist: loop {
        let snapshot = match table_api::list(&client, &query).await {
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
                tokio::time::sleep(retry).await;
                retry = (retry * 2).min(RETRY_MAX);
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
                s.rows = snapshot
                    .rows
                    .into_iter()
                    .map(|r| (r.uid.clone(), r))
                    .collect();
                Some(FeedEvent::Reset)
            });
        }
        loop {
            let Some(rv) = feed.upgrade().map(|f| {
                f.state
                    .read()
                    .unwrap_or_else(|e| e.into_inner())
                    .resource_version
                    .clone()
            }) else {
                return;
            };
            let mut events = match table_api::watch(&client, &query, &rv).await {
                Ok(events) => Box::pin(events),
                Err(TableError::Gone) => continue 'relist,
                // A watch refused (access revoked, token expired): list again, which
                // ends the feed with the API server's own words if it is refused too.
                Err(TableError::Rejected(r)) if is_refusal(&r) => {
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RETRY_MAX);
                    continue 'relist;
                }
                Err(error) => {
                    tracing::warn!(%error, "watch failed; retrying");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RETRY_MAX);
                    continue;
                }
            };
            while let Some(event) = events.next().await {
                let Some(f) = feed.upgrade() else { return };
                match event {
                    Ok(WatchEvent::Added(t)) | Ok(WatchEvent::Modified(t)) => {
                        retry = RETRY_MIN;
                        if column_change(&f, &t) {
                            tracing::info!("printer columns changed; relisting");
                            continue 'relist;
                        }
                        f.publish(|s| upsert(s, t));
                    }
                    Ok(WatchEvent::Deleted(t)) => f.publish(|s| delete(s, t)),
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

/// A CRD's printer columns can change under a running watch; a relist brings them in.
fn column_change(feed: &Feed, table: &RawTable) -> bool {
    !table.columns().is_empty()
        && feed.state.read().unwrap_or_else(|e| e.into_inner()).columns != table.columns()
}

fn upsert(state: &mut FeedState, table: RawTable) -> Option<FeedEvent> {
    let rows = table.into_rows();
    let last = rows.last()?.resource_version.clone();
    for row in &rows {
        state.rows.insert(row.uid.clone(), row.clone());
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
        state.rows.remove(uid);
    }
    state.resource_version = last.clone();
    Some(FeedEvent::Delta(TableDelta {
        upserts: vec![],
        deletes,
        resource_version: last,
    }))
}

/// Whether the API server refused the credentials themselves or what they may do.
fn is_refusal(r: &app::model::ApiRejection) -> bool {
    matches!(Failure::of(r), Failure::Unauthorized | Failure::Forbidden)
}

fn problem_sentence(r: &app::model::ApiRejection) -> String {
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

/// What [`Subscription::try_next_delta`] found queued.
#[derive(Debug)]
pub enum Queued {
    Delta(FeedMessage),
    /// A snapshot, a problem, or a gap: the viewer needs a fresh snapshot.
    Resync,
}
