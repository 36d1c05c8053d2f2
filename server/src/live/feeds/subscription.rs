//! A viewer's membership of a feed: it owns the sequence bookkeeping (skip what a
//! snapshot already holds, resynchronise after a relist), merges bursts into one
//! delta, and catches up from the feed's history (shared by all its viewers) after
//! falling behind its queue or when resuming from a [`Position`]: a snapshot only
//! when the history no longer reaches back. Read it with [`Subscription::next`] or as
//! a `Stream`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures::Stream;
use portico_core::live::protocol::{Position, TableChange, TableUpdate};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use crate::live::feeds::coalesce::Coalescer;
use crate::live::feeds::feed::{Current, Feed, FeedEvent, FeedMessage};

/// Upper bound of deltas merged into one update.
const MAX_MERGED: usize = 512;
/// Rows in each part of a table sent in parts, after the first (the transports'
/// messages stay small: see `socket::FIRST_PART`).
pub(crate) const LATER_PART: usize = 100;
/// Rows one catch-up update changes at most: a viewer far behind catches up in
/// updates as small as a snapshot's parts, each a position it can resume from.
const CATCH_UP_ROWS: usize = LATER_PART;

/// What a subscription does when it was its feed's last viewer (the hub stops the
/// feed after a grace period unless someone joins).
pub(crate) type OnLastViewer = Box<dyn FnOnce(&Arc<Feed>) + Send + Sync>;

/// How a viewer takes a table whose first list is still arriving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Only whole tables (scripts reading SSE, the owner tree).
    Whole,
    /// The first rows at once, then the rest in parts (the page).
    InParts,
}

/// Dropping it releases the viewer (the feed stops a grace period after its last).
pub struct Subscription {
    on_last_viewer: Option<OnLastViewer>,
    feed: Arc<Feed>,
    rx: broadcast::Receiver<FeedMessage>,
    /// The last sequence number this viewer's copy contains.
    seen: u64,
    started: bool,
    ended: bool,
    /// Behind the feed by more than the queue held: the rest comes from its history.
    behind: bool,
    resume: Option<Position>,
    delivery: Delivery,
}

impl Subscription {
    pub(crate) fn new(feed: Arc<Feed>, on_last_viewer: OnLastViewer) -> Self {
        // Subscribe before the first copy is taken: whatever is published in between
        // is in both, and the sequence number lets the viewer skip it.
        let rx = feed.tx.subscribe();
        Self {
            on_last_viewer: Some(on_last_viewer),
            feed,
            rx,
            seen: 0,
            started: false,
            ended: false,
            behind: false,
            resume: None,
            delivery: Delivery::Whole,
        }
    }

    /// Takes a table still being listed as `delivery` says (whole, by default).
    pub fn delivered(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Starts from `position` (the last update a previous connection received) when
    /// the feed still holds everything after it; else from a snapshot as usual.
    pub fn resuming(mut self, position: Option<Position>) -> Self {
        self.resume = position;
        self
    }

    fn at(&self) -> Position {
        Position {
            feed: self.feed.id.clone(),
            seq: self.seen,
        }
    }

    fn update(&self, change: TableChange) -> TableUpdate {
        TableUpdate {
            change,
            at: self.at(),
        }
    }

    /// The next update; `None` once the feed has ended or closed.
    pub async fn next(&mut self) -> Option<TableUpdate> {
        if self.ended {
            return None;
        }
        if !self.started {
            self.started = true;
            if let Some(update) = self.first() {
                return Some(self.finish(update));
            }
        }
        if self.behind
            && let Some(update) = self.catch_up()
        {
            return Some(self.finish(update));
        }
        loop {
            let message = match self.rx.recv().await {
                Ok(m) if m.seq <= self.seen => continue,
                Ok(m) => m,
                Err(RecvError::Lagged(missed)) => {
                    tracing::debug!(missed, "viewer fell behind; catching up");
                    self.fell_behind();
                    match self.catch_up() {
                        Some(update) => return Some(self.finish(update)),
                        None => continue,
                    }
                }
                Err(RecvError::Closed) => return None,
            };
            let first = match &message.event {
                FeedEvent::Delta(first) => first,
                FeedEvent::Rows { rows, complete } => {
                    self.seen = message.seq;
                    if self.delivery == Delivery::InParts {
                        let (rows, complete) = (rows.to_vec(), *complete);
                        return Some(self.update(TableChange::Rows { rows, complete }));
                    }
                    // A viewer of whole tables waits for the whole table (or what
                    // ended the list): whatever the feed holds now, past this page.
                    match self.current() {
                        Some(update) => return Some(self.finish(update)),
                        None => continue,
                    }
                }
                _ => match self.resync() {
                    Some(update) => return Some(self.finish(update)),
                    None => continue,
                },
            };
            self.seen = message.seq;
            let mut merged = Coalescer::default();
            merged.push(first);
            if self.merge_queued(&mut merged) {
                return Some(self.update(TableChange::Delta(merged.finish())));
            }
            // A relist came up while merging: a snapshot supersedes it all.
            if let Some(update) = self.resync() {
                return Some(self.finish(update));
            }
        }
    }

    /// Consumes the subscription as a stream of updates.
    pub fn into_stream(self) -> impl Stream<Item = TableUpdate> + Send + use<> {
        futures::stream::unfold(self, |mut sub| async move {
            let update = sub.next().await?;
            Some((update, sub))
        })
    }

    fn finish(&mut self, update: TableUpdate) -> TableUpdate {
        self.ended = matches!(update.change, TableChange::Ended(_));
        update
    }

    /// Merges deltas already queued into `merged`; false when something other than
    /// a delta was found, so the viewer needs a snapshot instead. Falling behind
    /// meanwhile ends the merge: what was merged holds, the rest comes from history.
    fn merge_queued(&mut self, merged: &mut Coalescer) -> bool {
        while merged.merged() < MAX_MERGED {
            match self.rx.try_recv() {
                Ok(m) if m.seq <= self.seen => continue,
                Ok(m) => match &m.event {
                    FeedEvent::Delta(d) => {
                        self.seen = m.seq;
                        merged.push(d);
                    }
                    _ => return false,
                },
                Err(TryRecvError::Empty) | Err(TryRecvError::Closed) => return true,
                Err(TryRecvError::Lagged(_)) => {
                    self.fell_behind();
                    return true;
                }
            }
        }
        true
    }

    /// The first update: what was missed since the resume position, or the current
    /// state; `None` while the first list is still under way.
    fn first(&mut self) -> Option<TableUpdate> {
        if let Some(position) = self.resume.take()
            && position.feed == self.feed.id
        {
            self.seen = position.seq;
            self.behind = true;
            return self.catch_up();
        }
        self.current()
    }

    /// Stops reading the queue, which no longer holds everything after `seen`: the
    /// queue starts again from now, and what came before comes from the history.
    fn fell_behind(&mut self) {
        self.rx = self.rx.resubscribe();
        self.behind = true;
    }

    /// The next part of what the viewer missed, merged from the feed's history (an
    /// empty delta if nothing was: it confirms the viewer is current); a snapshot
    /// when the history no longer reaches back that far.
    fn catch_up(&mut self) -> Option<TableUpdate> {
        let mut merged = Coalescer::default();
        let missed = self
            .feed
            .read()
            .missed_since(self.seen, &mut merged, CATCH_UP_ROWS);
        let Some((seq, current)) = missed else {
            self.behind = false;
            return self.resync();
        };
        self.seen = seq;
        self.behind = !current;
        Some(self.update(TableChange::Delta(merged.finish())))
    }

    /// A fresh copy of the feed's state, dropping whatever is queued (the copy holds
    /// it); `None` while the feed has not listed yet (or, for a viewer of whole
    /// tables, not listed all yet).
    fn resync(&mut self) -> Option<TableUpdate> {
        self.rx = self.rx.resubscribe();
        self.current()
    }

    fn current(&mut self) -> Option<TableUpdate> {
        let (current, seq) = self.feed.current();
        self.seen = seq;
        let change = match current {
            Current::Table {
                table,
                complete: true,
            } => TableChange::Snapshot(table),
            Current::Table { table, .. } if self.delivery == Delivery::InParts => {
                TableChange::Partial(table)
            }
            Current::Table { .. } => return None,
            Current::Problem(p) => TableChange::Problem(p),
            Current::Ended(p) => TableChange::Ended(p),
            Current::Pending => return None,
        };
        Some(self.update(change))
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.feed.viewers.fetch_sub(1, Ordering::AcqRel) == 1
            && let Some(on_last_viewer) = self.on_last_viewer.take()
        {
            on_last_viewer(&self.feed);
        }
    }
}
