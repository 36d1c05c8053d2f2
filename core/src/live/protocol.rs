//! What crosses a tab's one live connection (a WebSocket at `/api/live`): the page
//! subscribes to topics by a number it chooses, and every message the server sends
//! names the subscription it belongs to. Text frames, one JSON message each.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::overview::{Overview, OverviewQuery};
use crate::owner_tree::{ChildEntry, ChildrenQuery};
use crate::table::wire::{Row, TableDelta, TableQuery, TableSnapshot};

/// What a live table's viewer receives, in order: the frame every transport (the
/// tab's socket, SSE) encodes in its own way.
#[derive(Debug, Clone, PartialEq)]
pub enum TableChange {
    /// Replace the whole table (first, after a relist, after falling behind).
    Snapshot(TableSnapshot),
    /// Replace the table with its first rows: a big list is still arriving, and
    /// [`TableChange::Rows`] follow until it is whole (for viewers that take parts).
    Partial(TableSnapshot),
    /// More rows of the list a [`TableChange::Partial`] began; `complete` on the last.
    Rows { rows: Vec<Arc<Row>>, complete: bool },
    /// What changed since the previous update (possibly nothing: a resume that
    /// missed nothing says so).
    Delta(TableDelta),
    /// The feed cannot serve this now (e.g. the resource is gone); a sentence. A
    /// snapshot follows if it recovers.
    Problem(String),
    /// The feed stopped for good (the viewer's credentials were refused).
    Ended(String),
}

/// A change and the position it brings the viewer to (sent back on reconnect).
#[derive(Debug, Clone, PartialEq)]
pub struct TableUpdate {
    pub change: TableChange,
    pub at: Position,
}

/// How far a viewer has come in one feed: the feed's run and the last change it
/// received. Sent back on reconnect, it brings only what was missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub feed: String,
    pub seq: u64,
}

impl Position {
    /// `feed.seq`, as an SSE event id (`Last-Event-ID` on reconnect).
    pub fn to_event_id(&self) -> String {
        format!("{}.{}", self.feed, self.seq)
    }

    pub fn from_event_id(id: &str) -> Option<Self> {
        let (feed, seq) = id.split_once('.')?;
        Some(Self {
            feed: feed.to_string(),
            seq: seq.parse().ok()?,
        })
    }
}

/// What a live view follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "topic", rename_all = "snake_case")]
pub enum Topic {
    /// A live table (`kubectl get`'s columns), as snapshot and deltas.
    Table { query: TableQuery },
    /// The objects a uid owns, directly or further down, sent whole on each change.
    Children { query: ChildrenQuery },
    /// A signal whenever the CRD catalog changes (the navigation refetches).
    Crds,
    /// One container's log, followed as it grows (see [`LogQuery`]).
    Logs { query: LogQuery },
    /// Every container of every Pod a selector matches, merged: a workload's log
    /// (see [`WorkloadLogQuery`]; its lines are [`tagged`](super::tagged_line)).
    WorkloadLogs { query: WorkloadLogQuery },
    /// The home page: what is the person's and what is wrong, sent whole on each
    /// change (see [`crate::overview`]).
    Overview { query: OverviewQuery },
}

/// Which Pods a `workload_logs` view follows: those `selector` matches in `namespace`,
/// as they come and go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkloadLogQuery {
    pub namespace: String,
    /// A label selector (`app=web,tier!=db`), as the workload's `spec.selector` says.
    pub selector: String,
    /// Start this many lines back in each container; `None`: the whole log.
    #[serde(default)]
    pub tail_lines: Option<u32>,
}

impl WorkloadLogQuery {
    /// A namespace that is a path segment and a selector of bounded length.
    pub fn is_valid(&self) -> bool {
        crate::resource::is_path_segment(&self.namespace)
            && !self.selector.trim().is_empty()
            && self.selector.len() <= crate::table::wire::MAX_SELECTOR_LEN
    }
}

/// Which log a `logs` view follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogQuery {
    pub namespace: String,
    pub pod: String,
    /// `None`: the Pod's default container (its `kubectl.kubernetes.io/default-container`
    /// annotation, else its first).
    #[serde(default)]
    pub container: Option<String>,
    /// The log of the container's previous run (after a restart); it does not grow.
    #[serde(default)]
    pub previous: bool,
    /// Start this many lines back; `None`: the whole log.
    #[serde(default)]
    pub tail_lines: Option<u32>,
}

impl LogQuery {
    /// Whether the names are plausible API path segments (a crafted value cannot
    /// steer the request to another API path).
    pub fn is_valid(&self) -> bool {
        use crate::resource::is_path_segment;
        is_path_segment(&self.namespace)
            && is_path_segment(&self.pod)
            && self.container.as_deref().is_none_or(is_path_segment)
    }
}

/// A container a Pod's log can be read from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogContainer {
    pub name: String,
    /// An init container (runs to completion before the others).
    #[serde(default)]
    pub init: bool,
    /// How often it has restarted (a previous log exists only after one).
    #[serde(default)]
    pub restarts: i32,
}

/// The page to the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ClientMessage {
    Subscribe {
        id: u32,
        #[serde(flatten)]
        topic: Topic,
        /// Where a previous connection left off (tables only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resume: Option<Position>,
    },
    Unsubscribe {
        id: u32,
    },
}

/// The server to the page; `id` names the subscription. Externally tagged
/// (`{"delta":{"id":3,…}}`): the page then reads each message in one pass, where an
/// internally tagged enum is buffered first, and that buffering, instantiated for every
/// type a message holds, was about 86 KB of the page's wasm before compression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerMessage {
    /// The table, whole or (for a large one) its first rows in namespace and name
    /// order, so the page shows something at once; `Rows` bring the rest.
    Snapshot {
        id: u32,
        at: Position,
        table: TableSnapshot,
        #[serde(default = "whole")]
        complete: bool,
    },
    /// More rows of the snapshot before it; deltas come only after the last part.
    Rows {
        id: u32,
        rows: Vec<Arc<Row>>,
        complete: bool,
    },
    /// Changes since the last message; empty when a resume missed nothing.
    Delta {
        id: u32,
        at: Position,
        delta: TableDelta,
    },
    Children {
        id: u32,
        children: Vec<ChildEntry>,
    },
    Overview {
        id: u32,
        overview: Overview,
    },
    /// The CRD catalog changed.
    Changed {
        id: u32,
    },
    /// The view cannot be served now (the resource is gone, listing fails); a
    /// sentence. A snapshot follows if it recovers.
    Problem {
        id: u32,
        message: String,
    },
    /// A log view starts (again, after a reconnect): the page drops the lines it
    /// shows. `container` is the one followed, `containers` those the Pod has.
    LogOpened {
        id: u32,
        container: String,
        containers: Vec<LogContainer>,
    },
    /// The next lines of a log, oldest first; `skipped` lines were dropped just
    /// before them (the viewer or the bound could not keep up).
    Log {
        id: u32,
        lines: Vec<String>,
        #[serde(default)]
        skipped: u64,
    },
    /// The log ended (the container stopped, or a previous run's log was read to
    /// its end); a sentence. The subscription is over.
    LogEnded {
        id: u32,
        message: String,
    },
    /// The view was refused or ended for good (permission, limits, sign-in); a
    /// sentence. The subscription is over.
    Refused {
        id: u32,
        message: String,
    },
}

impl ServerMessage {
    pub fn id(&self) -> u32 {
        match self {
            Self::Snapshot { id, .. }
            | Self::Rows { id, .. }
            | Self::Delta { id, .. }
            | Self::Children { id, .. }
            | Self::Overview { id, .. }
            | Self::Changed { id }
            | Self::LogOpened { id, .. }
            | Self::Log { id, .. }
            | Self::LogEnded { id, .. }
            | Self::Problem { id, .. }
            | Self::Refused { id, .. } => *id,
        }
    }
}

fn whole() -> bool {
    true
}

/// The close code of a socket closed so that its sign-in is renewed (single sign-on:
/// the ID token its views act with is due). The page reconnects at once, resuming
/// every view, and shows no interruption.
pub const CLOSE_TO_RENEW: u16 = 4001;

/// The longest message a page may send: a subscription with the longest selectors.
pub const MAX_CLIENT_MESSAGE: usize = 16 * 1024;
/// Subscriptions one connection may hold at once (a page needs five at most).
pub const MAX_SUBSCRIPTIONS: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_reads_as_flat_json() {
        let message: ClientMessage = serde_json::from_str(
            r#"{"op":"subscribe","id":3,"topic":"table","query":{"group":"","version":"v1",
                "plural":"pods","namespace":"default","label_selector":null,"field_selector":null},
                "resume":{"feed":"ab","seq":7}}"#,
        )
        .expect("parses");
        let ClientMessage::Subscribe { id, topic, resume } = message else {
            panic!("a subscription expected");
        };
        assert_eq!(id, 3);
        assert!(matches!(topic, Topic::Table { query } if query.plural == "pods"));
        assert_eq!(
            resume,
            Some(Position {
                feed: "ab".into(),
                seq: 7
            })
        );
        let crds: ClientMessage =
            serde_json::from_str(r#"{"op":"subscribe","id":1,"topic":"crds"}"#).expect("parses");
        assert!(matches!(
            crds,
            ClientMessage::Subscribe {
                topic: Topic::Crds,
                resume: None,
                ..
            }
        ));
    }

    #[test]
    fn a_log_subscription_reads_with_defaults_and_refuses_crafted_names() {
        let message: ClientMessage = serde_json::from_str(
            r#"{"op":"subscribe","id":4,"topic":"logs","query":{"namespace":"team","pod":"web-0"}}"#,
        )
        .expect("parses");
        let ClientMessage::Subscribe {
            topic: Topic::Logs { query },
            ..
        } = message
        else {
            panic!("a log subscription expected");
        };
        assert_eq!(query.container, None);
        assert!(!query.previous);
        assert_eq!(query.tail_lines, None);
        assert!(query.is_valid());
        let crafted = LogQuery {
            container: Some("../../secrets".into()),
            ..query
        };
        assert!(!crafted.is_valid());
    }

    #[test]
    fn a_server_message_is_named_by_its_one_key_and_reads_back() {
        let message = ServerMessage::Log {
            id: 9,
            lines: vec!["ready".into()],
            skipped: 2,
        };
        let text = serde_json::to_string(&message).expect("writes");
        assert_eq!(text, r#"{"log":{"id":9,"lines":["ready"],"skipped":2}}"#);
        let back: ServerMessage = serde_json::from_str(&text).expect("reads");
        assert_eq!(back, message);
        let changed: ServerMessage =
            serde_json::from_str(r#"{"changed":{"id":1}}"#).expect("reads");
        assert_eq!(changed.id(), 1);
        // The former internally tagged form is not read as something else.
        assert!(serde_json::from_str::<ServerMessage>(r#"{"type":"changed","id":1}"#).is_err());
    }

    #[test]
    fn event_ids_round_trip_and_garbage_is_none() {
        let p = Position {
            feed: "0f1e".into(),
            seq: 42,
        };
        assert_eq!(Position::from_event_id(&p.to_event_id()), Some(p));
        assert_eq!(Position::from_event_id("12345"), None);
        assert_eq!(Position::from_event_id("ab.x"), None);
    }
}
