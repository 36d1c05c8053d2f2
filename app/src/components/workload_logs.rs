//! A workload's log, merged (stern-style): every container of every Pod it runs, each
//! line tagged with its Pod and container in a colour of their own, Pods that start
//! followed and Pods that go noted; filtered by text or a regular expression, paused
//! without losing what arrives meanwhile, wrapped or not, with or without kubelet's
//! timestamps, and downloaded as kept.

use leptos::prelude::*;

use crate::components::kept_view::Kept;
use crate::components::live_badge::LiveBadge;
use crate::components::log_parts::{Highlighted, LogCount, LogEmpty, LogEndedNote, LogRow, save};
use crate::live::{ViewState, follow_signal};
use portico_core::live::log_buffer::{LogBuffer, LogLine};
use portico_core::live::protocol::{ServerMessage, Topic, WorkloadLogQuery};
use portico_core::live::tagged_line;

/// Lines back each container's log starts from when the view opens.
const TAIL: u32 = 100;
/// Colours Pod tags take turns in (`log-tag-0` …).
const TAG_COLOURS: u64 = 8;

/// A workload's merged log kept across redraws of the object page, which provides it
/// (with the Pod's log, in `pod_logs::LogViews`).
#[derive(Clone, Copy, Default)]
pub struct KeptWorkloadLog(Kept<WorkloadLogState>);

impl KeptWorkloadLog {
    /// Ends the log held (the page shows a Pod's instead).
    pub fn end(self) {
        self.0.end();
    }
}

/// The view's state and subscription, kept across redraws of the page
/// ([`KeptWorkloadLog`]).
#[derive(Clone, Copy)]
pub struct WorkloadLogState {
    again: RwSignal<u32>,
    buffer: RwSignal<LogBuffer>,
    status: RwSignal<ViewState>,
    ended: RwSignal<Option<String>>,
    search: RwSignal<String>,
    pattern: RwSignal<bool>,
    /// While paused: the last line shown (lines after it are kept, not shown).
    paused_at: RwSignal<Option<u64>>,
    wrap: RwSignal<bool>,
    stamps: RwSignal<bool>,
}

impl WorkloadLogState {
    fn new(namespace: String, selector: String) -> Self {
        let state = Self {
            again: RwSignal::new(0),
            buffer: RwSignal::new(LogBuffer::default()),
            status: RwSignal::new(ViewState::Waiting),
            ended: RwSignal::new(None),
            search: RwSignal::new(String::new()),
            pattern: RwSignal::new(false),
            paused_at: RwSignal::new(None),
            wrap: RwSignal::new(true),
            stamps: RwSignal::new(false),
        };
        let topic = Signal::derive(move || {
            state.again.track();
            Topic::WorkloadLogs {
                query: WorkloadLogQuery {
                    namespace: namespace.clone(),
                    selector: selector.clone(),
                    tail_lines: Some(TAIL),
                },
            }
        });
        follow_signal(topic, move |message| state.received(message));
        state
    }

    fn received(self, message: ServerMessage) {
        self.status.update(|s| *s = s.after(&message));
        match message {
            ServerMessage::LogOpened { .. } => {
                self.buffer.update(LogBuffer::clear);
                self.ended.set(None);
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

    /// The lines to show now: those the filter keeps, up to the pause; or why the
    /// pattern is not one.
    fn shown(self) -> Result<Vec<LogLine>, String> {
        let term = self.search.get();
        let kept = self.buffer.with(|b| {
            if self.pattern.get() && !term.is_empty() {
                b.matching_pattern(&term)
            } else {
                Ok(b.matching(&term))
            }
        })?;
        Ok(match self.paused_at.get() {
            Some(last) => kept.into_iter().filter(|l| l.seq <= last).collect(),
            None => kept,
        })
    }
}

#[component]
pub fn WorkloadLogs(namespace: String, selector: String, name: String) -> impl IntoView {
    let key = format!("{namespace}?{selector}");
    let make = || WorkloadLogState::new(namespace, selector);
    let state = match use_context::<KeptWorkloadLog>() {
        Some(kept) => kept.0.get_or_make(key, make),
        None => make(),
    };
    let WorkloadLogState {
        again,
        buffer,
        status,
        ended,
        search,
        pattern,
        paused_at,
        wrap,
        stamps,
    } = state;
    let shown = Memo::new(move |_| state.shown());
    let waiting = move || {
        paused_at.get().map_or(0, |last| {
            buffer.with(|b| {
                b.matching("")
                    .iter()
                    .filter(|l| l.seq > last && !l.marker)
                    .count()
            })
        })
    };
    let pause = move |_| {
        let last = buffer.with_untracked(|b| b.matching("").last().map_or(0, |l| l.seq));
        paused_at.update(|p| *p = if p.is_some() { None } else { Some(last) });
    };
    let download = move |_| {
        let text = buffer.with_untracked(LogBuffer::text);
        save(&format!("{name}.log"), &text);
    };
    view! {
        <div class="pod-logs workload-logs" data-testid="workload-logs">
            <div class="log-toolbar">
                <input type="search" class="filter log-search" placeholder="Filter lines"
                    aria-label="Filter lines" data-testid="log-search"
                    prop:value=move || search.get()
                    on:input:target=move |ev| search.set(ev.target().value())/>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="log-pattern" prop:checked=move || pattern.get()
                        on:change:target=move |ev| pattern.set(ev.target().checked())/>
                    "Regular expression"
                </label>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="log-stamps" prop:checked=move || stamps.get()
                        on:change:target=move |ev| stamps.set(ev.target().checked())/>
                    "Timestamps"
                </label>
                <label class="control checkbox">
                    <input type="checkbox" data-testid="log-wrap" prop:checked=move || wrap.get()
                        on:change:target=move |ev| wrap.set(ev.target().checked())/>
                    "Wrap"
                </label>
                <button type="button" class="small-btn" data-testid="log-pause" on:click=pause>
                    {move || if paused_at.get().is_some() { "Resume" } else { "Pause" }}
                </button>
                <button type="button" class="small-btn" data-testid="log-download" on:click=download>"Download"</button>
                <LiveBadge view=status testid="log-live-status"/>
            </div>
            <div class="log-lines" class:nowrap=move || !wrap.get() data-testid="log-lines">
                {move || {
                    // A new term or a switch redraws every line; new lines alone add rows.
                    let term = if pattern.get() { String::new() } else { search.get() };
                    let stamps = stamps.get();
                    view! {
                        <For
                            each=move || shown.get().unwrap_or_default()
                            key=|line: &LogLine| line.seq
                            children=move |line: LogLine| view! { <WorkloadLine line=line term=term.clone() stamps=stamps/> }
                        />
                    }
                }}
                {move || shown.with(|s| s.as_ref().err().cloned()).map(|why| view! {
                    <p class="field-error" data-testid="log-pattern-error">{format!("Not a regular expression: {why}")}</p>
                })}
                <LogEmpty buffer ended/>
            </div>
            <div class="log-footer">
                <LogCount buffer/>
                {move || paused_at.get().is_some().then(|| view! {
                    <span class="badge pending" data-testid="log-paused">{move || format!("Paused: {} new lines kept", waiting())}</span>
                })}
                <LogEndedNote ended again/>
            </div>
        </div>
    }
}

/// One line: its Pod and container tag in their colour, then the text (a note of the
/// view's own in italics); anything else as a plain log line.
#[component]
fn WorkloadLine(line: LogLine, term: String, stamps: bool) -> impl IntoView {
    let Some(parts) = (!line.marker)
        .then(|| tagged_line::parse(&line.text))
        .flatten()
    else {
        return view! { <LogRow line=line.clone() term=term/> }.into_any();
    };
    let colour = format!("log-tag log-tag-{}", tag_colour(parts.pod));
    let tag = match parts.container {
        Some(container) => format!("{}/{container}", parts.pod),
        None => parts.pod.to_string(),
    };
    let text: std::sync::Arc<str> = parts.text.into();
    let note = parts.container.is_none();
    let at = stamps.then(|| parts.at.to_string());
    view! {
        <div class="log-line tagged" class:log-note=note data-testid="log-line" data-pod=parts.pod.to_string()>
            {at.map(|at| view! { <span class="log-at">{at}" "</span> })}
            <span class=colour>{tag}</span>" "
            <Highlighted text term/>
        </div>
    }
    .into_any()
}

/// A Pod's colour: the same for its every line, and for it on every page.
fn tag_colour(pod: &str) -> u64 {
    // FNV-1a: stable across builds, unlike the std hasher's seeds.
    let hash = pod.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    hash % TAG_COLOURS
}
