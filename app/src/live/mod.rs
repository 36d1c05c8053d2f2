//! Live views in the browser: every subscription a tab holds (tables, children, the
//! navigation) shares one WebSocket ([`socket`]), which reconnects by itself and
//! resumes each table where it left off. [`follow`] ties a subscription to the
//! component that made it; [`ViewState`] and [`SocketState`] say how live a view is.

#[cfg(feature = "hydrate")]
mod socket;

use leptos::prelude::*;

use portico_core::live::protocol::{Position, ServerMessage, Topic};

/// The tab's connection.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketState {
    Connecting,
    Open,
    /// Lost at `since` (ms since the epoch); `attempt` reconnections tried so far.
    Reconnecting {
        attempt: u32,
        since: f64,
    },
}

/// Where a table's updates have reached, sent back on reconnect so only what was
/// missed comes again. A snapshot sent in parts counts once its last part is in:
/// resumed from its first part, the server would send only later changes, and the
/// table would stay without the rest of its rows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumePoint {
    at: Option<Position>,
    /// The position of a snapshot whose parts are still coming.
    pending: Option<Position>,
}

impl ResumePoint {
    /// Takes note of `message`, received for this table.
    pub fn note(&mut self, message: &ServerMessage) {
        match message {
            ServerMessage::Snapshot {
                at, complete: true, ..
            }
            | ServerMessage::Delta { at, .. } => {
                self.at = Some(at.clone());
                self.pending = None;
            }
            ServerMessage::Snapshot {
                at,
                complete: false,
                ..
            } => {
                self.at = None;
                self.pending = Some(at.clone());
            }
            ServerMessage::Rows { complete: true, .. } => {
                if let Some(at) = self.pending.take() {
                    self.at = Some(at);
                }
            }
            // A problem replaces the table when it recovers: no position to keep.
            ServerMessage::Problem { .. } => *self = Self::default(),
            _ => {}
        }
    }

    /// Where to resume from; `None` asks for a fresh snapshot.
    pub fn at(&self) -> Option<Position> {
        self.at.clone()
    }
}

/// One view's own state, beside the connection's.
#[derive(Debug, Clone, PartialEq)]
pub enum ViewState {
    Waiting,
    Live,
    /// The server cannot serve the view now; what is shown dates from `since`.
    Problem {
        message: String,
        since: f64,
    },
    /// Refused or ended for good, with the reason.
    Refused(String),
    /// Came to its end (a log whose container stopped), with the reason.
    Ended(String),
}

impl ViewState {
    /// The state after `message` (for a view that received it).
    pub fn after(&self, message: &ServerMessage) -> Self {
        match message {
            ServerMessage::Problem { message, .. } => Self::Problem {
                message: message.clone(),
                // Stale since the first problem, not the latest repeat of it.
                since: match self {
                    Self::Problem { since, .. } => *since,
                    _ => now_ms(),
                },
            },
            ServerMessage::Refused { message, .. } => Self::Refused(message.clone()),
            ServerMessage::LogEnded { message, .. } => Self::Ended(message.clone()),
            _ => Self::Live,
        }
    }
}

/// How live a view is, as a badge: its CSS class and its words.
pub fn badge(socket: &SocketState, view: &ViewState) -> (&'static str, String) {
    match (view, socket) {
        (ViewState::Refused(reason), _) => ("badge problem", format!("Refused: {reason}")),
        (ViewState::Ended(_), _) => ("badge ended", "Ended".to_string()),
        (_, SocketState::Reconnecting { attempt, since }) => (
            "badge pending",
            format!(
                "Reconnecting (attempt {attempt}) · stale since {}",
                clock(*since)
            ),
        ),
        (ViewState::Problem { message, since }, _) => (
            "badge problem",
            format!("Stale since {}: {message}", clock(*since)),
        ),
        (ViewState::Waiting, _) | (_, SocketState::Connecting) => {
            ("badge pending", "Connecting…".to_string())
        }
        (ViewState::Live, SocketState::Open) => ("badge live", "Live".to_string()),
    }
}

/// Milliseconds since the epoch, on either side.
pub fn now_ms() -> f64 {
    #[cfg(feature = "hydrate")]
    {
        js_sys::Date::now()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as f64)
            .unwrap_or(0.0)
    }
}

/// `HH:MM:SS` of a time, in the browser's zone (UTC on the server).
fn clock(ms: f64) -> String {
    #[cfg(feature = "hydrate")]
    {
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms));
        format!(
            "{:02}:{:02}:{:02}",
            date.get_hours(),
            date.get_minutes(),
            date.get_seconds()
        )
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let seconds = (ms / 1000.0) as i64;
        format!(
            "{:02}:{:02}:{:02}",
            seconds / 3600 % 24,
            seconds / 60 % 60,
            seconds % 60
        )
    }
}

/// The tab's connection state (always `Connecting` while rendering on the server).
pub fn socket_state() -> Signal<SocketState> {
    #[cfg(feature = "hydrate")]
    {
        socket::state()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        Signal::stored(SocketState::Connecting)
    }
}

/// A subscription on the tab's connection; dropping it unsubscribes.
pub struct Subscription {
    #[cfg(feature = "hydrate")]
    _held: socket::Held,
}

/// Subscribes to `topic`, calling `handler` with each message for it (browser only;
/// `None` while rendering on the server).
pub fn subscribe(topic: Topic, handler: impl Fn(ServerMessage) + 'static) -> Option<Subscription> {
    #[cfg(feature = "hydrate")]
    {
        Some(Subscription {
            _held: socket::subscribe(topic, handler),
        })
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (topic, handler);
        None
    }
}

/// Subscribes for as long as the calling component lives.
pub fn follow(topic: Topic, handler: impl Fn(ServerMessage) + Clone + 'static) {
    follow_signal(Signal::stored(topic), handler);
}

/// A subscription that follows a changing topic: the old one ends as the new begins,
/// and the last when the calling component goes away.
pub fn follow_signal(topic: Signal<Topic>, handler: impl Fn(ServerMessage) + Clone + 'static) {
    #[cfg(feature = "hydrate")]
    {
        let held = StoredValue::new(send_wrapper::SendWrapper::new(None::<Subscription>));
        Effect::new(move |_| {
            let topic = topic.get();
            // End the old subscription first: its messages must not reach the new view.
            held.update_value(|h| **h = None);
            let next = subscribe(topic, handler.clone());
            held.update_value(|h| **h = next);
        });
        on_cleanup(move || held.update_value(|h| **h = None));
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = (topic, handler);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_badge_says_how_live_the_view_is() {
        let open = SocketState::Open;
        assert_eq!(badge(&open, &ViewState::Live).1, "Live");
        assert_eq!(
            badge(&SocketState::Connecting, &ViewState::Live).1,
            "Connecting…"
        );
        let lost = SocketState::Reconnecting {
            attempt: 3,
            since: 3_723_000.0,
        };
        assert_eq!(
            badge(&lost, &ViewState::Live).1,
            "Reconnecting (attempt 3) · stale since 01:02:03"
        );
        let refused = ViewState::Refused("You may not watch pods.".into());
        assert_eq!(badge(&lost, &refused).1, "Refused: You may not watch pods.");
        let problem = ViewState::Live.after(&ServerMessage::Problem {
            id: 1,
            message: "gone".into(),
        });
        assert!(badge(&open, &problem).1.ends_with(": gone"));
        assert!(badge(&open, &problem).1.starts_with("Stale since "));
        let ended = ViewState::Live.after(&ServerMessage::LogEnded {
            id: 1,
            message: "Container app stopped.".into(),
        });
        assert_eq!(badge(&lost, &ended), ("badge ended", "Ended".to_string()));
    }
}
