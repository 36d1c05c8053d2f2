//! The hub over a scripted source: the recovery paths a real API server reaches only
//! by chance (410 Gone, printer columns changing under a watch, a viewer falling
//! behind the queue, an upstream failing N times) and resuming, deterministically.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::core::WatchEvent;
use portico_core::live::protocol::Position;
use portico_core::payload::ApiRejection;
use portico_core::table::state::TableState;
use portico_core::table::wire::{Column, Row, TableQuery, TableSnapshot};
use tokio::sync::mpsc;

use crate::live::feeds::feed::VIEWER_QUEUE;
use crate::live::feeds::hub::WatchHub;
use crate::live::feeds::subscription::Delivery;
use crate::live::feeds::subscription::LATER_PART;
use crate::live::feeds::subscription::Subscription;
use crate::live::rows::history::HISTORY;
use crate::live::upstream::source::{FeedSource, WatchEvents};
use crate::live::upstream::table_api::{ListPage, RawTable, TableError};
use portico_core::live::protocol::{TableChange, TableUpdate};

type Event = Result<WatchEvent<RawTable>, TableError>;

/// Answers lists from a queue, in order; each watch delivers what the test sends on
/// its channel, when the test sends it. Once a queue is empty, calls wait forever (an
/// idle API server).
#[derive(Default)]
struct Script {
    lists: Mutex<VecDeque<Result<ListPage, TableError>>>,
    watches: Mutex<VecDeque<mpsc::UnboundedReceiver<Event>>>,
    list_calls: AtomicUsize,
    /// Told when a test adds a list answer.
    more_lists: tokio::sync::Notify,
}

impl Script {
    fn new(lists: Vec<Result<TableSnapshot, TableError>>) -> Arc<Self> {
        Self::pages(
            lists
                .into_iter()
                .map(|list| list.map(ListPage::whole))
                .collect(),
        )
    }

    /// Answers list requests page by page (a page with a `next` token is followed by
    /// a request for the next).
    fn pages(pages: Vec<Result<ListPage, TableError>>) -> Arc<Self> {
        Arc::new(Self {
            lists: Mutex::new(pages.into()),
            ..Self::default()
        })
    }

    /// Adds a list answer (a list call waiting for one takes it).
    fn answer(&self, page: Result<ListPage, TableError>) {
        self.lists.lock().unwrap().push_back(page);
        self.more_lists.notify_waiters();
    }

    /// The next watch's events: sent by the test, delivered as they come.
    fn next_watch(&self) -> mpsc::UnboundedSender<Event> {
        let (tx, rx) = mpsc::unbounded_channel();
        self.watches.lock().unwrap().push_back(rx);
        tx
    }
}

#[async_trait::async_trait]
impl FeedSource for Script {
    async fn list(
        &self,
        _: &TableQuery,
        _: usize,
        _: Option<&str>,
    ) -> Result<ListPage, TableError> {
        self.list_calls.fetch_add(1, Ordering::SeqCst);
        loop {
            let more = self.more_lists.notified();
            let next = self.lists.lock().unwrap().pop_front();
            match next {
                Some(answer) => return answer,
                None => more.await,
            }
        }
    }

    async fn watch(&self, _: &TableQuery, _: &str) -> Result<WatchEvents, TableError> {
        let next = self.watches.lock().unwrap().pop_front();
        match next {
            // The watch stays open after its events, as a real one does.
            Some(events) => Ok(futures::stream::unfold(events, |mut events| async move {
                Some((events.recv().await?, events))
            })
            .chain(futures::stream::pending())
            .boxed()),
            None => futures::future::pending().await,
        }
    }
}

fn hub(script: &Arc<Script>) -> WatchHub {
    WatchHub::over(script.clone(), Duration::from_secs(1), 10, 10)
}

fn query() -> TableQuery {
    TableQuery {
        group: "example.com".into(),
        version: "v1".into(),
        plural: "widgets".into(),
        namespace: Some("default".into()),
        label_selector: None,
        field_selector: None,
        columns: None,
    }
}

fn column(name: &str) -> Column {
    Column {
        name: name.into(),
        kind: "string".into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
        ..Default::default()
    }
}

fn row(name: &str, rv: u64) -> Row {
    Row {
        uid: format!("uid-{name}"),
        name: name.into(),
        namespace: Some("default".into()),
        resource_version: rv.to_string(),
        created: None,
        deleting: false,
        owners: vec![],
        changed: None,
        cells: vec![serde_json::json!(name)],
    }
}

fn snapshot(columns: &[&str], names: &[&str], rv: u64) -> TableSnapshot {
    TableSnapshot {
        columns: columns.iter().map(|c| column(c)).collect(),
        rows: names.iter().map(|n| Arc::new(row(n, rv))).collect(),
        resource_version: rv.to_string(),
    }
}

/// A watch event as the API server sends it: a one-row Table.
fn event(kind: &str, name: &str, rv: u64, columns: &[&str]) -> Event {
    let columns: Vec<serde_json::Value> = columns
        .iter()
        .map(|c| serde_json::json!({"name": c, "type": "string"}))
        .collect();
    let line = serde_json::json!({"type": kind, "object": {
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": rv.to_string()},
        "columnDefinitions": if columns.is_empty() { serde_json::Value::Null } else { columns.into() },
        "rows": [{"cells": [name], "object": {"metadata": {
            "name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "resourceVersion": rv.to_string()}}}]}});
    Ok(serde_json::from_value(line).expect("a watch event"))
}

fn gone() -> Event {
    Ok(
        serde_json::from_value(serde_json::json!({"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
        "reason": "Expired", "message": "too old resource version"}}))
        .expect("an error event"),
    )
}

async fn next(sub: &mut Subscription) -> TableUpdate {
    tokio::time::timeout(Duration::from_secs(60), sub.next())
        .await
        .expect("an update")
        .expect("the feed goes on")
}

fn names(table: &TableState) -> Vec<String> {
    table
        .view("", None, false, 0)
        .into_iter()
        .map(|r| r.name.clone())
        .collect()
}

fn snapshot_names(update: &TableUpdate) -> Vec<String> {
    match &update.change {
        TableChange::Snapshot(t) => names(&TableState::from_snapshot(t.clone())),
        other => panic!("a snapshot expected, got {other:?}"),
    }
}

/// Reads updates into `table` until it holds `n` rows.
async fn read_until_len(sub: &mut Subscription, table: &mut TableState, n: usize) {
    while table.len() != n {
        match next(sub).await.change {
            TableChange::Snapshot(t) => *table = TableState::from_snapshot(t),
            TableChange::Delta(d) => table.apply(d),
            other => panic!("{other:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_410_gone_relists_and_viewers_get_the_new_snapshot() {
    let script = Script::new(vec![
        Ok(snapshot(&["Name"], &["a"], 1)),
        Ok(snapshot(&["Name"], &["a", "b"], 5)),
    ]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut sub = hub.subscribe(query()).unwrap();
    assert_eq!(snapshot_names(&next(&mut sub).await), ["a"]);
    watch.send(gone()).unwrap();
    assert_eq!(snapshot_names(&next(&mut sub).await), ["a", "b"]);
    assert_eq!(script.list_calls.load(Ordering::SeqCst), 2);
}

#[tokio::test(start_paused = true)]
async fn changed_printer_columns_relist_with_the_new_columns() {
    let script = Script::new(vec![
        Ok(snapshot(&["Name"], &["a"], 1)),
        Ok(snapshot(&["Name", "Phase"], &["a"], 2)),
    ]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut sub = hub.subscribe(query()).unwrap();
    let TableChange::Snapshot(t) = next(&mut sub).await.change else {
        panic!("a snapshot first")
    };
    assert_eq!(t.columns, [column("Name")]);
    watch
        .send(event("MODIFIED", "a", 2, &["Name", "Phase"]))
        .unwrap();
    let TableChange::Snapshot(t) = next(&mut sub).await.change else {
        panic!("a new snapshot, not a delta with cells for columns the viewer lacks")
    };
    assert_eq!(t.columns, [column("Name"), column("Phase")]);
    assert_eq!(script.list_calls.load(Ordering::SeqCst), 2);
}

/// Sends `count` new rows named `w{i}` from `first` on.
fn burst(watch: &mpsc::UnboundedSender<Event>, first: usize, count: usize) {
    for i in first..first + count {
        watch
            .send(event("ADDED", &format!("w{i}"), 10 + i as u64, &[]))
            .unwrap();
    }
}

/// A viewer that read nothing while `count` rows were added, the table a viewer
/// that kept up holds, and the feed's watch (with its hub, which must outlive them).
struct Behind {
    slow: Subscription,
    table: TableState,
    watch: mpsc::UnboundedSender<Event>,
    _hub: WatchHub,
}

async fn behind_by(count: usize) -> Behind {
    let script = Script::new(vec![Ok(snapshot(&["Name"], &[], 1))]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut slow = hub.subscribe(query()).unwrap();
    let mut fast = hub.subscribe(query()).unwrap();
    assert_eq!(snapshot_names(&next(&mut slow).await), Vec::<String>::new());
    let mut table = TableState::default();
    read_until_len(&mut fast, &mut table, 0).await;
    burst(&watch, 0, count);
    read_until_len(&mut fast, &mut table, count).await;
    Behind {
        slow,
        table,
        watch,
        _hub: hub,
    }
}

#[tokio::test(start_paused = true)]
async fn a_viewer_that_falls_behind_the_queue_catches_up_from_the_history_in_small_parts() {
    let count = VIEWER_QUEUE * 5;
    let Behind {
        mut slow,
        table,
        watch,
        _hub,
    } = behind_by(count).await;
    // More than the queue holds went by. The slow viewer catches up in deltas of at
    // most a snapshot part's rows (no 10,000-row snapshot for a viewer a few seconds late), each
    // resumable, and ends with the same table.
    let mut caught_up = TableState::default();
    let mut parts = 0;
    while caught_up.len() < count {
        let update = next(&mut slow).await;
        let TableChange::Delta(delta) = update.change else {
            panic!("deltas from the history, not a snapshot: {update:?}")
        };
        assert!(
            delta.upserts.len() <= LATER_PART,
            "{} rows",
            delta.upserts.len()
        );
        caught_up.apply(delta);
        parts += 1;
    }
    assert_eq!(parts, count.div_ceil(LATER_PART));
    assert_eq!(names(&caught_up), names(&table));
    // And it goes on from the queue after that.
    burst(&watch, count, 1);
    let TableChange::Delta(last) = next(&mut slow).await.change else {
        panic!("a delta")
    };
    assert_eq!(row_names(&last.upserts), [format!("w{count}")]);
}

#[tokio::test(start_paused = true)]
async fn a_viewer_behind_further_than_the_history_gets_a_snapshot() {
    let Behind {
        mut slow, table, ..
    } = behind_by(HISTORY + 10).await;
    assert_eq!(snapshot_names(&next(&mut slow).await), names(&table));
}

#[tokio::test(start_paused = true)]
async fn an_upstream_failing_n_times_is_retried_until_it_answers() {
    let failures = 4;
    let mut lists: Vec<Result<TableSnapshot, TableError>> = (0..failures)
        .map(|_| Err(TableError::Request("connection refused".into())))
        .collect();
    lists.push(Ok(snapshot(&["Name"], &["a"], 1)));
    let script = Script::new(lists);
    let hub = hub(&script);
    let mut sub = hub.subscribe(query()).unwrap();
    assert_eq!(snapshot_names(&next(&mut sub).await), ["a"]);
    assert_eq!(script.list_calls.load(Ordering::SeqCst), failures + 1);
}

#[tokio::test(start_paused = true)]
async fn refused_credentials_end_the_feed_with_the_reason() {
    let refused = ApiRejection {
        code: 403,
        reason: "Forbidden".into(),
        message: "widgets is forbidden".into(),
        causes: vec![],
    };
    let script = Script::new(vec![Err(TableError::Rejected(refused))]);
    let hub = hub(&script);
    let mut sub = hub.subscribe(query()).unwrap();
    let update = next(&mut sub).await;
    assert!(matches!(&update.change, TableChange::Ended(m) if m.contains("widgets is forbidden")));
    assert!(sub.next().await.is_none(), "nothing after the end");
}

#[tokio::test(start_paused = true)]
async fn a_resumed_viewer_gets_only_what_it_missed() {
    let script = Script::new(vec![Ok(snapshot(&["Name"], &["a"], 1))]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut first = hub.subscribe(query()).unwrap();
    let start = next(&mut first).await;
    let mut table = TableState::default();
    if let TableChange::Snapshot(t) = start.change.clone() {
        table = TableState::from_snapshot(t);
    }
    watch.send(event("ADDED", "b", 2, &[])).unwrap();
    watch.send(event("ADDED", "c", 3, &[])).unwrap();
    read_until_len(&mut first, &mut table, 3).await;

    // Back from where the snapshot left it: the two rows since, and nothing else.
    let mut resumed = hub
        .subscribe(query())
        .unwrap()
        .resuming(Some(start.at.clone()));
    let update = next(&mut resumed).await;
    let TableChange::Delta(missed) = update.change else {
        panic!("a delta, not a snapshot")
    };
    let upserted: Vec<&str> = missed.upserts.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(upserted, ["b", "c"]);

    // Up to date: an empty delta confirms it.
    let mut current = hub
        .subscribe(query())
        .unwrap()
        .resuming(Some(update.at.clone()));
    assert_eq!(
        next(&mut current).await.change,
        TableChange::Delta(Default::default())
    );

    // A position from another run of the feed (a restarted server) gets a snapshot.
    let stranger = Position {
        feed: "another-run".into(),
        seq: start.at.seq,
    };
    let mut other = hub.subscribe(query()).unwrap().resuming(Some(stranger));
    assert_eq!(snapshot_names(&next(&mut other).await), ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn a_position_from_before_a_relist_gets_a_snapshot() {
    let script = Script::new(vec![
        Ok(snapshot(&["Name"], &["a"], 1)),
        Ok(snapshot(&["Name"], &["a", "z"], 9)),
    ]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut sub = hub.subscribe(query()).unwrap();
    let start = next(&mut sub).await;
    watch.send(event("ADDED", "b", 2, &[])).unwrap();
    watch.send(gone()).unwrap();
    let mut table = TableState::default();
    while names(&table) != ["a", "z"] {
        match next(&mut sub).await.change {
            TableChange::Snapshot(t) => table = TableState::from_snapshot(t),
            TableChange::Delta(d) => table.apply(d),
            other => panic!("{other:?}"),
        }
    }
    let mut resumed = hub.subscribe(query()).unwrap().resuming(Some(start.at));
    assert_eq!(snapshot_names(&next(&mut resumed).await), ["a", "z"]);
}

/// Two feeds (two people, or two selectors) whose watches deliver the same rows and
/// changes hold one copy of each; a row only one of them was sent stays its own.
#[tokio::test(start_paused = true)]
async fn feeds_that_were_sent_the_same_rows_share_one_copy() {
    let script = Script::new(vec![
        Ok(snapshot(&["Name"], &["a", "b"], 1)),
        Ok(snapshot(&["Name"], &["a", "b"], 1)),
    ]);
    let (first, second) = (script.next_watch(), script.next_watch());
    let hub = hub(&script);
    let mut ada = hub.subscribe(query()).unwrap();
    let other = TableQuery {
        label_selector: Some("team=blue".into()),
        ..query()
    };
    let mut bob = hub.subscribe(other).unwrap();
    let rows = |update: TableUpdate| match update.change {
        TableChange::Snapshot(t) => {
            let mut rows = t.rows;
            rows.sort_by(|x, y| x.name.cmp(&y.name));
            rows
        }
        other => panic!("a snapshot expected, got {other:?}"),
    };
    let (ada_rows, bob_rows) = (rows(next(&mut ada).await), rows(next(&mut bob).await));
    assert_eq!(hub.upstream_watches(), 2);
    for (a, b) in ada_rows.iter().zip(&bob_rows) {
        assert!(Arc::ptr_eq(a, b), "{} is one copy", a.name);
    }
    // The same change through both watches: one copy of the change and its row.
    first.send(event("MODIFIED", "a", 2, &[])).unwrap();
    second.send(event("MODIFIED", "a", 2, &[])).unwrap();
    let delta = |update: TableUpdate| match update.change {
        TableChange::Delta(d) => d,
        other => panic!("a delta expected, got {other:?}"),
    };
    let (to_ada, to_bob) = (delta(next(&mut ada).await), delta(next(&mut bob).await));
    assert!(Arc::ptr_eq(&to_ada.upserts[0], &to_bob.upserts[0]));
    // What only one watch sent is only in that feed.
    first.send(event("ADDED", "c", 3, &[])).unwrap();
    assert_eq!(delta(next(&mut ada).await).upserts[0].name, "c");
    second.send(event("ADDED", "d", 4, &[])).unwrap();
    let to_bob = delta(next(&mut bob).await);
    assert_eq!(
        to_bob
            .upserts
            .iter()
            .map(|r| r.name.as_str())
            .collect::<Vec<_>>(),
        ["d"],
        "Bob is never sent Ada's row"
    );
}

fn page(names: &[&str], rv: u64, next: Option<&str>) -> Result<ListPage, TableError> {
    Ok(ListPage {
        table: snapshot(&["Name"], names, rv),
        next: next.map(str::to_string),
    })
}

fn row_names(rows: &[Arc<Row>]) -> Vec<&str> {
    let mut names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names
}

/// A big first list: the page sees its first page at once and the rest as it comes,
/// a viewer of whole tables only the whole; changes follow, nothing twice.
#[tokio::test(start_paused = true)]
async fn a_first_list_in_pages_shows_its_first_rows_at_once() {
    let script = Script::pages(vec![page(&["a", "b"], 7, Some("after-b"))]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut page_view = hub.subscribe(query()).unwrap().delivered(Delivery::InParts);
    let mut whole_view = hub.subscribe(query()).unwrap();
    let TableChange::Partial(first) = next(&mut page_view).await.change else {
        panic!("the first page first");
    };
    assert_eq!(row_names(&first.rows), ["a", "b"]);
    // The rest of the list arrives later.
    script.answer(page(&["c"], 7, None));
    let mut rows = first.rows;
    loop {
        match next(&mut page_view).await.change {
            TableChange::Rows {
                rows: more,
                complete,
            } => {
                rows.extend(more);
                if complete {
                    break;
                }
            }
            other => panic!("parts expected, got {other:?}"),
        }
    }
    assert_eq!(row_names(&rows), ["a", "b", "c"]);
    assert_eq!(
        snapshot_names(&next(&mut whole_view).await),
        ["a", "b", "c"]
    );
    watch.send(event("ADDED", "d", 8, &[])).unwrap();
    for view in [&mut page_view, &mut whole_view] {
        let TableChange::Delta(delta) = next(view).await.change else {
            panic!("a change after the list");
        };
        assert_eq!(row_names(&delta.upserts), ["d"]);
    }
    assert_eq!(script.list_calls.load(Ordering::SeqCst), 2);
}

/// A relist after 410 Gone comes in pages too, but viewers keep their table until
/// the new one is whole: never a table cut short.
#[tokio::test(start_paused = true)]
async fn a_relist_in_pages_replaces_the_table_once_whole() {
    let script = Script::pages(vec![
        page(&["a"], 1, None),
        page(&["a", "b"], 9, Some("after-b")),
        page(&["c"], 9, None),
    ]);
    let watch = script.next_watch();
    let hub = hub(&script);
    let mut view = hub.subscribe(query()).unwrap().delivered(Delivery::InParts);
    assert_eq!(snapshot_names(&next(&mut view).await), ["a"]);
    watch.send(gone()).unwrap();
    assert_eq!(snapshot_names(&next(&mut view).await), ["a", "b", "c"]);
    assert_eq!(script.list_calls.load(Ordering::SeqCst), 3);
}
