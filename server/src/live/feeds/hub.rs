//! The watch hub: one upstream Table watch per [`TableQuery`] and identity, shared by
//! every viewer of that query and reference-counted; stopped a grace period after its
//! last viewer leaves. A feed's own life is in [`crate::live::feeds::feed`], a viewer's side in
//! [`crate::live::feeds::subscription`].

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portico_core::table::wire::TableQuery;
use tracing::Instrument;

use crate::cluster::registry::KindRegistry;
use crate::live::budgets::limits::{LimitRefused, LiveLimits};
use crate::live::budgets::memory::MemoryBudget;
use crate::live::feeds::feed::{self, Feed};
use crate::live::feeds::subscription::Subscription;
use crate::live::upstream::source::{ApiServer, FeedSource};

struct HubInner {
    /// The portal's own source, for [`WatchHub::subscribe`].
    source: Arc<dyn FeedSource>,
    feeds: Mutex<HashMap<FeedKey, Arc<Feed>>>,
    grace: Duration,
    /// Feeds one identity may run (lingering ones included), and all together.
    feeds_per_owner: usize,
    feeds_overall: usize,
    /// Bytes the feeds hold, per person and overall.
    memory: Arc<MemoryBudget>,
    /// The number of running feeds, published for tests, benchmarks and metrics.
    feed_count: tokio::sync::watch::Sender<usize>,
    /// Permits for the big pages of lists (see [`feed::LATER_PAGES_AT_ONCE`]).
    later_pages: Arc<tokio::sync::Semaphore>,
    /// The kinds' registry, for the people's feeds to read a CRD's columns by its
    /// definition (see [`ApiServer`]).
    kinds: Option<KindRegistry>,
}

/// A feed is shared by viewers of the same query acting with the same identity
/// (`None`: the hub's own client). Keeping identities apart means a feed never runs
/// on credentials that expired or were revoked for someone else.
pub(crate) type FeedKey = (Option<String>, TableQuery);

/// Cheap to clone; all clones share the feeds.
#[derive(Clone)]
pub struct WatchHub {
    inner: Arc<HubInner>,
}

impl WatchHub {
    pub fn new(client: kube::Client, grace: Duration) -> Self {
        Self::with_limits(client, grace, usize::MAX, usize::MAX)
    }

    /// A hub bounded by `limits`: feeds per identity and overall, and the bytes
    /// their tables may hold; CRDs' columns read by their definitions in `kinds`.
    pub fn bounded(
        client: kube::Client,
        grace: Duration,
        limits: &LiveLimits,
        kinds: KindRegistry,
    ) -> Self {
        let source = ApiServer {
            client,
            kinds: Some(kinds.clone()),
        };
        Self::build(
            Arc::new(source),
            grace,
            (limits.feeds_per_person, limits.feeds_overall),
            MemoryBudget::new(limits.bytes_per_person, limits.bytes_overall),
            Some(kinds),
        )
    }

    /// Sets `bytes` aside in the same budget as the feeds, for as long as the
    /// reservation lives (a log view's queue, which `person` is charged for too).
    pub fn reserve(
        &self,
        person: &Option<String>,
        bytes: usize,
    ) -> Result<crate::live::budgets::memory::Reservation, crate::live::budgets::limits::LimitRefused>
    {
        self.inner.memory.reserve(person, bytes)
    }

    /// Bytes the feeds hold for `person`, and for everyone.
    pub fn bytes_held(&self, person: &Option<String>) -> (usize, usize) {
        self.inner.memory.held(person)
    }

    /// A hub starting at most `per_owner` feeds for one identity and `overall` in all.
    pub fn with_limits(
        client: kube::Client,
        grace: Duration,
        per_owner: usize,
        overall: usize,
    ) -> Self {
        let source = ApiServer {
            client,
            kinds: None,
        };
        Self::over(Arc::new(source), grace, per_owner, overall)
    }

    /// A hub whose own feeds read `source` (tests script one).
    pub fn over(
        source: Arc<dyn FeedSource>,
        grace: Duration,
        per_owner: usize,
        overall: usize,
    ) -> Self {
        Self::build(
            source,
            grace,
            (per_owner, overall),
            MemoryBudget::unbounded(),
            None,
        )
    }

    fn build(
        source: Arc<dyn FeedSource>,
        grace: Duration,
        (per_owner, overall): (usize, usize),
        memory: MemoryBudget,
        kinds: Option<KindRegistry>,
    ) -> Self {
        Self {
            inner: Arc::new(HubInner {
                source,
                feeds: Mutex::new(HashMap::new()),
                grace,
                feeds_per_owner: per_owner,
                feeds_overall: overall,
                memory: Arc::new(memory),
                feed_count: tokio::sync::watch::channel(0).0,
                later_pages: Arc::new(tokio::sync::Semaphore::new(feed::LATER_PAGES_AT_ONCE)),
                kinds,
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

    /// Each running feed's resource (`plural[.group]`) and its viewers (metrics).
    pub fn feeds_by_resource(&self) -> Vec<(String, usize)> {
        let feeds = self.inner.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds
            .iter()
            .map(|((_, query), feed)| {
                let resource = crate::portal_metrics::resource_label(&query.group, &query.plural);
                (resource, feed.viewers.load(Ordering::Acquire))
            })
            .collect()
    }

    /// The most bytes the feeds and log queues may hold in all.
    pub fn bytes_limit(&self) -> usize {
        self.inner.memory.overall_limit()
    }

    /// Waits until exactly `n` upstream watches run; false after `timeout`.
    pub async fn wait_upstream_watches(&self, n: usize, timeout: Duration) -> bool {
        let mut count = self.inner.feed_count.subscribe();
        tokio::time::timeout(timeout, count.wait_for(|c| *c == n))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Joins (or starts) the feed for `query`, from the hub's own source.
    pub fn subscribe(&self, query: TableQuery) -> Result<Subscription, LimitRefused> {
        let source = self.inner.source.clone();
        self.join((None, query), || source, None)
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
        let kinds = self.inner.kinds.clone();
        let source = || {
            Arc::new(ApiServer {
                client: client.clone(),
                kinds,
            }) as Arc<dyn FeedSource>
        };
        self.join((owner, query), source, person)
    }

    /// The running feed for `key` with one more viewer, or a new one reading
    /// `source()` if the limits allow. A feed that ended (refused credentials) is
    /// replaced: the permission may be back.
    fn join(
        &self,
        key: FeedKey,
        source: impl FnOnce() -> Arc<dyn FeedSource>,
        person: Option<String>,
    ) -> Result<Subscription, LimitRefused> {
        let mut feeds = self.inner.feeds.lock().unwrap_or_else(|e| e.into_inner());
        let running = feeds.get(&key).filter(|f| !f.has_ended()).cloned();
        let feed = match running {
            Some(feed) => feed,
            None => {
                let (per_owner, overall) = (self.inner.feeds_per_owner, self.inner.feeds_overall);
                if feeds.len() >= overall {
                    return Err(LimitRefused::FeedsOverall(overall).counted());
                }
                if feeds.values().filter(|f| f.person == person).count() >= per_owner {
                    return Err(LimitRefused::FeedsPerPerson(per_owner).counted());
                }
                self.inner.memory.admits(&person)?;
                let feed = start_feed(source(), key.1.clone(), person, &self.inner);
                if let Some(old) = feeds.insert(key.clone(), feed.clone()) {
                    old.stop();
                }
                feed
            }
        };
        feed.viewers.fetch_add(1, Ordering::AcqRel);
        self.inner.feed_count.send_replace(feeds.len());
        let hub = self.clone();
        let on_last_viewer = Box::new(move |feed: &Arc<Feed>| hub.last_viewer_left(&key, feed));
        Ok(Subscription::new(feed, on_last_viewer))
    }

    /// The last viewer of `feed` left: stop its upstream watch after the grace
    /// period unless someone joined meanwhile.
    pub(crate) fn last_viewer_left(&self, key: &FeedKey, feed: &Arc<Feed>) {
        let hub = self.clone();
        let key = key.clone();
        let feed = Arc::downgrade(feed);
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

/// A feed's resource for logs: `plural.group/version`, and its namespace.
fn describe(query: &TableQuery) -> String {
    let scope = query.namespace.as_deref().unwrap_or("all namespaces");
    format!(
        "{}.{}/{} in {scope}",
        query.plural, query.group, query.version
    )
}

fn start_feed(
    source: Arc<dyn FeedSource>,
    query: TableQuery,
    person: Option<String>,
    hub: &HubInner,
) -> Arc<Feed> {
    let feed = Arc::new(Feed::new(
        person,
        hub.memory.clone(),
        hub.later_pages.clone(),
    ));
    let span = tracing::info_span!(
        "feed",
        caller = feed.person.as_deref().unwrap_or("portal"),
        resource = %describe(&query),
    );
    let task = tokio::spawn(feed::run(source, query, Arc::downgrade(&feed)).instrument(span));
    *feed.task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
    feed
}
