//! The tab's one WebSocket. Subscriptions are kept here by number; when the socket
//! opens (first time or again) each is sent, tables with the position they reached,
//! so a reconnect brings only what was missed. A lost socket is retried with backoff.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{CloseEvent, Event, MessageEvent, WebSocket};

use super::SocketState;
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic};

const RETRY_MIN_MS: u64 = 500;
const RETRY_MAX_MS: u64 = 10_000;
/// How long a socket may take to open before it is given up and tried again: behind a
/// proxy a handshake can hang (sent to a Pod that is going away while the proxy still
/// lists it), and a browser waits for the proxy's own timeout, 30 s or more.
const OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

type Handler = Rc<dyn Fn(ServerMessage)>;

struct Entry {
    topic: Topic,
    /// Where this table's updates reached (sent back on reconnect).
    resume: super::ResumePoint,
    handler: Handler,
}

/// An open (or opening) socket and the handlers it holds.
struct Open {
    socket: WebSocket,
    _on_open: Closure<dyn FnMut(Event)>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_close: Closure<dyn FnMut(CloseEvent)>,
}

#[derive(Default)]
struct Connection {
    socket: Option<Open>,
    entries: HashMap<u32, Entry>,
    next_id: u32,
    attempt: u32,
    lost_at: Option<f64>,
    retry_pending: bool,
    /// Counts sockets made, so a timer of an earlier one leaves a newer alone.
    generation: u64,
}

thread_local! {
    static CONNECTION: RefCell<Connection> = RefCell::default();
    static STATE: ArcRwSignal<SocketState> = ArcRwSignal::new(SocketState::Connecting);
}

pub fn state() -> Signal<SocketState> {
    let state = STATE.with(Clone::clone);
    Signal::derive(move || state.get())
}

fn set_state(next: SocketState) {
    STATE.with(|s| s.set(next));
}

/// Held by a [`super::Subscription`]; unsubscribes when dropped.
pub struct Held(u32);

impl Drop for Held {
    fn drop(&mut self) {
        let id = self.0;
        CONNECTION.with(|c| {
            let mut c = c.borrow_mut();
            c.entries.remove(&id);
            c.send(&ClientMessage::Unsubscribe { id });
        });
    }
}

pub fn subscribe(topic: Topic, handler: impl Fn(ServerMessage) + 'static) -> Held {
    let id = CONNECTION.with(|c| {
        let mut c = c.borrow_mut();
        c.next_id += 1;
        let id = c.next_id;
        c.send(&ClientMessage::Subscribe {
            id,
            topic: topic.clone(),
            resume: None,
        });
        c.entries.insert(
            id,
            Entry {
                topic,
                resume: super::ResumePoint::default(),
                handler: Rc::new(handler),
            },
        );
        id
    });
    connect_unless_connected();
    Held(id)
}

impl Connection {
    /// Sends `message` if the socket is open; otherwise it goes out on open.
    fn send(&self, message: &ClientMessage) {
        let Some(open) = &self.socket else { return };
        if open.socket.ready_state() != WebSocket::OPEN {
            return;
        }
        if let Ok(text) = serde_json::to_string(message) {
            let _ = open.socket.send_with_str(&text);
        }
    }
}

fn connect_unless_connected() {
    let idle = CONNECTION.with(|c| {
        let c = c.borrow();
        c.socket.is_none() && !c.retry_pending
    });
    if idle {
        connect();
    }
}

fn socket_url() -> Option<String> {
    let location = web_sys::window()?.location();
    let scheme = if location.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    let host = location.host().ok()?;
    Some(format!(
        "{scheme}://{host}{}",
        crate::base::url("/api/live")
    ))
}

fn connect() {
    let Some(socket) = socket_url().and_then(|url| WebSocket::new(&url).ok()) else {
        lost();
        return;
    };
    let on_open = Closure::<dyn FnMut(Event)>::new(move |_| opened());
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        let Some(text) = ev.data().as_string() else {
            return;
        };
        match serde_json::from_str::<ServerMessage>(&text) {
            Ok(message) => received(message),
            Err(error) => {
                web_sys::console::warn_1(&format!("a live message not read: {error}").into());
                // Well-formed JSON of a shape this page's code does not know comes from a
                // newer release (the page was loaded from the one before): the page is
                // loaded again, from it.
                if error.classify() == serde_json::error::Category::Data {
                    crate::reload_for_new_release();
                }
            }
        }
    });
    let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |ev: CloseEvent| {
        if ev.code() == portico_core::live::protocol::CLOSE_TO_RENEW {
            renew();
        } else {
            lost();
        }
    });
    socket.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    socket.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    socket.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    let generation = CONNECTION.with(|c| {
        let mut c = c.borrow_mut();
        c.generation += 1;
        c.socket = Some(Open {
            socket,
            _on_open: on_open,
            _on_message: on_message,
            _on_close: on_close,
        });
        c.generation
    });
    // Closing a socket that has not opened fires its close event: a retry follows.
    let give_up = move || {
        CONNECTION.with(|c| {
            let c = c.borrow();
            if let Some(open) = c.socket.as_ref().filter(|_| c.generation == generation)
                && open.socket.ready_state() == WebSocket::CONNECTING
            {
                let _ = open.socket.close();
            }
        })
    };
    let _ = set_timeout_with_handle(give_up, OPEN_TIMEOUT);
}

/// The socket opened: (re)send every subscription, tables from where they were.
fn opened() {
    CONNECTION.with(|c| {
        let mut c = c.borrow_mut();
        c.attempt = 0;
        c.lost_at = None;
        let mut ids: Vec<u32> = c.entries.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let Some(entry) = c.entries.get(&id) {
                c.send(&ClientMessage::Subscribe {
                    id,
                    topic: entry.topic.clone(),
                    resume: entry.resume.at(),
                });
            }
        }
    });
    set_state(SocketState::Open);
}

fn received(message: ServerMessage) {
    let id = message.id();
    let handler = CONNECTION.with(|c| {
        let mut c = c.borrow_mut();
        let entry = c.entries.get_mut(&id)?;
        entry.resume.note(&message);
        let handler = entry.handler.clone();
        if matches!(
            message,
            ServerMessage::Refused { .. } | ServerMessage::LogEnded { .. }
        ) {
            // Over for good: not sent again on reconnect.
            c.entries.remove(&id);
        }
        Some(handler)
    });
    // Called with the connection released: a handler may subscribe or unsubscribe.
    if let Some(handler) = handler {
        handler(message);
    }
}

/// The server closed the socket to renew the sign-in: reconnect at once, showing the
/// views as live (they resume where they were). A reconnection that fails is lost as
/// any other.
fn renew() {
    CONNECTION.with(|c| c.borrow_mut().socket = None);
    connect();
}

/// The socket closed (or never opened): retry after a backoff that doubles, spread at
/// random so that tabs closed together (a rolling restart) do not come back together.
fn lost() {
    let (attempt, since) = CONNECTION.with(|c| {
        let mut c = c.borrow_mut();
        c.socket = None;
        c.attempt += 1;
        let since = *c.lost_at.get_or_insert_with(super::now_ms);
        c.retry_pending = true;
        (c.attempt, since)
    });
    set_state(SocketState::Reconnecting { attempt, since });
    let wait = portico_core::backoff::jittered(
        attempt,
        Duration::from_millis(RETRY_MIN_MS),
        Duration::from_millis(RETRY_MAX_MS),
        js_sys::Math::random(),
    );
    let retry = move || {
        CONNECTION.with(|c| c.borrow_mut().retry_pending = false);
        connect();
    };
    if set_timeout_with_handle(retry, wait).is_err() {
        CONNECTION.with(|c| c.borrow_mut().retry_pending = false);
    }
}
