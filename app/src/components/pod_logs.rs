//! A Pod's container logs, followed live over the tab's socket: a tab per container,
//! the previous run, how far back to start, search and download of the shown lines,
//! and a view that keeps to the newest line until the person scrolls up.

use leptos::prelude::*;

use crate::components::kept_view::Kept;
use crate::components::live_badge::LiveBadge;
use crate::components::log_parts::{LogCount, LogEmpty, LogEndedNote, LogRow, save};
use crate::components::workload_logs::KeptWorkloadLog;
use crate::live::{ViewState, follow_signal};
use portico_core::live::log_buffer::{LogBuffer, LogLine};
use portico_core::live::protocol::{LogContainer, LogQuery, ServerMessage, Topic};

/// Where a log starts: lines back from the end (`None`: all of it).
const TAILS: [(Option<u32>, &str); 5] = [
    (Some(100), "100"),
    (Some(200), "200"),
    (Some(500), "500"),
    (Some(1000), "1000"),
    (None, "all"),
];

/// One log view's state and subscription. Held by the object page ([`LogViews`]),
/// not by the view: the page redraws its parts whenever the object changes (a Pod's
/// status does often), and the log must not start over each time.
#[derive(Clone, Copy)]
struct LogState {
    /// `None` until the server names the Pod's default container.
    container: RwSignal<Option<String>>,
    previous: RwSignal<bool>,
    tail: RwSignal<Option<u32>>,
    /// Bumped by "Follow again": the same query, subscribed anew.
    again: RwSignal<u32>,
    containers: RwSignal<Vec<LogContainer>>,
    following: RwSignal<Option<String>>,
    buffer: RwSignal<LogBuffer>,
    status: RwSignal<ViewState>,
    ended: RwSignal<Option<String>>,
    search: RwSignal<String>,
}

impl LogState {
    fn new(namespace: String, pod: String) -> Self {
        let state = Self {
            container: RwSignal::new(None),
            previous: RwSignal::new(false),
            tail: RwSignal::new(Some(200)),
            again: RwSignal::new(0),
            containers: RwSignal::new(Vec::new()),
            following: RwSignal::new(None),
            buffer: RwSignal::new(LogBuffer::default()),
            status: RwSignal::new(ViewState::Waiting),
            ended: RwSignal::new(None),
            search: RwSignal::new(String::new()),
        };
        let topic = Signal::derive(move || {
            state.again.track();
            Topic::Logs {
                query: LogQuery {
                    namespace: namespace.clone(),
                    pod: pod.clone(),
                    container: state.container.get(),
                    previous: state.previous.get(),
                    tail_lines: state.tail.get(),
                },
            }
        });
        follow_signal(topic, move |message| state.received(message));
        state
    }

    fn received(self, message: ServerMessage) {
        self.status.update(|s| *s = s.after(&message));
        match message {
            ServerMessage::LogOpened {
                container,
                containers,
                ..
            } => {
                // A view (re)starts from its tail: what was shown would repeat.
                self.buffer.update(LogBuffer::clear);
                self.ended.set(None);
                self.following.set(Some(container));
                if !containers.is_empty() {
                    self.containers.set(containers);
                }
            }
            ServerMessage::Log { lines, skipped, .. } => {
                self.buffer.update(|b| b.push(lines, skipped));
            }
            ServerMessage::LogEnded { message, .. } | ServerMessage::Refused { message, .. } => {
                self.ended.set(Some(message));
            }
            _ => {}
        }
    }
}

/// The log views an object page holds (a Pod's, or the chosen Pod of a Stack; and a
/// workload's merged log), kept across redraws of the page's parts. Provided by the
/// object page.
#[derive(Clone, Copy)]
pub struct LogViews {
    pod: Kept<LogState>,
    pub workload: KeptWorkloadLog,
    /// The Pod chosen among a Stack's (kept across redraws too).
    pub chosen_pod: RwSignal<Option<String>>,
    /// A Stack's Pods all at once, merged, rather than the chosen one.
    pub all_pods: RwSignal<bool>,
}

impl LogViews {
    /// Makes log views outlive redraws below the calling component.
    pub fn provide() {
        let workload = KeptWorkloadLog::default();
        // The workload's log view finds its own part without knowing this one.
        provide_context(workload);
        provide_context(Self {
            pod: Kept::default(),
            workload,
            chosen_pod: RwSignal::new(None),
            all_pods: RwSignal::new(false),
        });
    }

    /// Ends the Pod log held (the page shows the workload's instead).
    pub fn end_pod(self) {
        self.pod.end();
    }

    /// The state of `pod`'s log: the one held, or a new one (ending the old).
    fn state(self, namespace: &str, pod: &str) -> LogState {
        let (namespace, pod) = (namespace.to_string(), pod.to_string());
        self.pod.get_or_make(format!("{namespace}/{pod}"), || {
            LogState::new(namespace, pod)
        })
    }
}

#[component]
pub fn PodLogs(namespace: String, pod: String) -> impl IntoView {
    let state = match use_context::<LogViews>() {
        Some(views) => views.state(&namespace, &pod),
        None => LogState::new(namespace.clone(), pod.clone()),
    };
    let LogState {
        container,
        previous,
        tail,
        again,
        containers,
        following,
        buffer,
        status,
        ended,
        search,
    } = state;
    let stick = RwSignal::new(true);
    let scroller = NodeRef::<leptos::html::Div>::new();
    let file_name = move || format!("{pod}-{}.log", following.get().unwrap_or_default());

    // Keep to the newest line while the person has not scrolled up.
    Effect::new(move |_| {
        buffer.track();
        search.track();
        if stick.get_untracked() {
            request_animation_frame(move || {
                // The view may be gone by the next frame (the page redrew it).
                if let Some(el) = scroller.try_get_untracked().flatten() {
                    el.set_scroll_top(el.scroll_height());
                }
            });
        }
    });
    let on_scroll = move |_| {
        if let Some(el) = scroller.try_get_untracked().flatten() {
            let at_bottom = el.scroll_top() + el.client_height() >= el.scroll_height() - 8;
            stick.set(at_bottom);
        }
    };
    let download = move |_| {
        let text = buffer.with_untracked(LogBuffer::text);
        save(&file_name(), &text);
    };

    view! {
        <div class="pod-logs" data-testid="pod-logs">
            <div class="log-toolbar">
                <div class="log-tabs" role="tablist">{move || container_tabs(following, containers, container)}</div>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="log-previous"
                        prop:checked=move || previous.get()
                        on:change:target=move |ev| previous.set(ev.target().checked())/>
                    "Previous run"
                </label>
                <label class="control inline">
                    "Start"
                    <select aria-label="Lines to start from" data-testid="log-tail"
                        on:change:target=move |ev| tail.set(ev.target().value().parse().ok())>
                        {tail_options(tail.get_untracked())}
                    </select>
                    "lines back"
                </label>
                <input type="search" class="filter log-search" placeholder="Search shown lines"
                    aria-label="Search shown lines" data-testid="log-search"
                    prop:value=move || search.get()
                    on:input:target=move |ev| search.set(ev.target().value())/>
                <button type="button" class="small-btn" data-testid="log-download"
                    on:click=download>"Download"</button>
                <LiveBadge view=status testid="log-live-status"/>
            </div>
            <div class="log-lines" node_ref=scroller on:scroll=on_scroll data-testid="log-lines">
                {move || matching_lines(buffer, search)}
                <LogEmpty buffer ended/>
            </div>
            <div class="log-footer">
                <LogCount buffer/>
                <LogEndedNote ended again/>
                {move || (!stick.get()).then(|| newest_button(stick, scroller))}
            </div>
        </div>
    }
}

/// A tab per container of the Pod, the one followed active; a click follows another.
/// Reads `following` and `containers` tracked: drawn again when either changes.
fn container_tabs(
    following: RwSignal<Option<String>>,
    containers: RwSignal<Vec<LogContainer>>,
    container: RwSignal<Option<String>>,
) -> impl IntoView {
    let chosen = following.get();
    containers
        .get()
        .into_iter()
        .map(|c| {
            let active = chosen.as_deref() == Some(c.name.as_str());
            let name = c.name.clone();
            let label = tab_label(&c);
            view! {
                <button type="button" class="log-tab" class:active=active role="tab"
                    aria-selected=active.to_string() data-container=c.name.clone()
                    on:click=move |_| container.set(Some(name.clone()))>{label}</button>
            }
        })
        .collect_view()
}

/// A container's tab: its name, whether it is an init container, and its restarts.
fn tab_label(c: &LogContainer) -> String {
    format!(
        "{}{}{}",
        c.name,
        if c.init { " (init)" } else { "" },
        if c.restarts > 0 {
            format!(" ↻{}", c.restarts)
        } else {
            String::new()
        }
    )
}

/// The choices of where a log starts, `tail` selected.
fn tail_options(tail: Option<u32>) -> impl IntoView {
    TAILS
        .iter()
        .map(|(n, label)| {
            let value = n.map(|n| n.to_string()).unwrap_or_default();
            let selected = *n == tail;
            view! { <option value=value selected=selected>{*label}</option> }
        })
        .collect_view()
}

/// The shown lines that match the search term. Reads the term tracked: a new term
/// redraws every line; new lines alone add rows.
fn matching_lines(buffer: RwSignal<LogBuffer>, search: RwSignal<String>) -> impl IntoView {
    let term = search.get();
    view! {
        <For
            each=move || buffer.with(|b| b.matching(&term))
            key=|line: &LogLine| line.seq
            children=move |line: LogLine| view! { <LogRow line=line term=search.get_untracked()/> }
        />
    }
}

/// Back to the newest line (and keeping to it), once the person has scrolled up.
fn newest_button(stick: RwSignal<bool>, scroller: NodeRef<leptos::html::Div>) -> impl IntoView {
    view! {
        <button type="button" class="log-action" on:click=move |_| {
            stick.set(true);
            if let Some(el) = scroller.get_untracked() {
                el.set_scroll_top(el.scroll_height());
            }
        }>"↓ Newest"</button>
    }
}
