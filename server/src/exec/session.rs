//! One terminal, from its first message to its end: admitted (the person may
//! `create pods/exec` here, a place in their memory budget), opened with their own
//! client, then keystrokes in and output out, paced, until the command ends, the page
//! closes, the sign-in or the permission ends, nobody types for a while
//! (`LiveLimits::terminal_idle`), or Portico
//! shuts down. Each ends with one audit line: who, where, what, how long, how many
//! bytes; never what was typed or shown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures::future::FusedFuture;
use futures::stream::{SplitSink, SplitStream};
use futures::{FutureExt, SinkExt, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{Api, AttachParams, AttachedProcess};
use portico_core::live::terminal::{TerminalEvent, TerminalInput, TerminalSize, TerminalStart};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tracing::Instrument;

use super::status;
use crate::auth::access::AccessQuestion;
use crate::cluster::caller::Caller;
use crate::live::LiveState;
use crate::live::budgets::memory::Reservation;
use crate::live::logs::container;

/// How long the page has to say what to run.
const FIRST_MESSAGE: Duration = Duration::from_secs(10);
/// Output to the page, at most, per second: a `cat` of a large file slows to this,
/// the container waiting, rather than filling Portico's memory.
const OUTPUT_PER_SECOND: usize = 2 << 20;
/// Keystrokes and pastes into the container, at most, per second.
const INPUT_PER_SECOND: usize = 256 << 10;
/// Bytes read from the container at once, and held in each pipe between.
const CHUNK: usize = 16 << 10;
/// What one terminal may hold, set aside in the person's memory budget: the API
/// connection's WebSocket buffers, the pipes and a chunk on its way.
const RESERVED: usize = 256 << 10;
/// How often the sign-in and the idle time are looked at.
const SESSION_CHECK: Duration = Duration::from_secs(2);
const PING_EVERY: Duration = Duration::from_secs(25);
/// How long one message may take to leave before the page is given up.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the API server has to say how a command ended once its output ended.
const EXIT_STATUS: Duration = Duration::from_secs(5);

type Sink = SplitSink<WebSocket, Message>;

pub async fn serve(
    socket: WebSocket,
    state: LiveState,
    caller: Caller,
    headers: axum::http::HeaderMap,
) {
    let (mut sink, mut incoming) = socket.split();
    let start = match first_message(&mut incoming).await {
        Ok(start) => start,
        Err(message) => {
            tracing::info!(target: "portico::audit", who = caller.name(), refused = %message, "terminal refused");
            return refuse(&mut sink, message).await;
        }
    };
    let span = tracing::info_span!(
        "terminal",
        caller = caller.name(),
        namespace = %start.namespace,
        pod = %start.pod,
    );
    async move {
        let opened = match open(&state, &caller, &start).await {
            Ok(opened) => opened,
            Err(message) => {
                tracing::info!(
                    target: "portico::audit",
                    who = caller.name(),
                    namespace = %start.namespace,
                    pod = %start.pod,
                    container = start.container.as_deref().unwrap_or("(default)"),
                    command = %start.command.audited(),
                    refused = %message,
                    "terminal refused",
                );
                return refuse(&mut sink, message).await;
            }
        };
        let terminal = Terminal {
            state,
            caller,
            headers,
            start,
        };
        terminal.run(opened, sink, incoming).await;
    }
    .instrument(span)
    .await
}

/// What the page asks to run: its first message, valid.
async fn first_message(incoming: &mut SplitStream<WebSocket>) -> Result<TerminalStart, String> {
    let frame = tokio::time::timeout(FIRST_MESSAGE, incoming.next())
        .await
        .map_err(|_| "The page did not say what to run.".to_string())?;
    let Some(Ok(Message::Text(text))) = frame else {
        return Err("The page did not say what to run.".into());
    };
    // Not the parser's words: they may quote the command, which is kept out of logs.
    let mut start: TerminalStart = serde_json::from_str(text.as_str())
        .map_err(|_| "Portico could not read what to run.".to_string())?;
    start.size = start.size.clamped();
    if !start.is_valid() {
        return Err(
            "The namespace, Pod and container must be Kubernetes names, and the command at most 64 arguments and 4 KiB."
                .into(),
        );
    }
    Ok(start)
}

/// A terminal admitted and running.
struct Opened {
    process: AttachedProcess,
    container: String,
    containers: Vec<String>,
    _reserved: Reservation,
}

/// Admits and starts `start` as `caller`, or says why not.
async fn open(state: &LiveState, caller: &Caller, start: &TerminalStart) -> Result<Opened, String> {
    let reserved = state
        .hub
        .reserve(&caller.person(), RESERVED)
        .map_err(|refused| refused.to_string())?;
    if let Some(verb) = missing_exec_verb(state, caller, start).await? {
        return Err(format!(
            "{} may not {verb} pods/exec in namespace {}.",
            caller.name(),
            start.namespace
        ));
    }
    let client = state
        .auth
        .pool
        .for_terminal(caller)
        .map_err(|error| format!("Portico cannot act for you right now: {error}"))?;
    let pods: Api<Pod> = Api::namespaced(client, &start.namespace);
    let (container, containers) = container_of(&pods, start).await?;
    let params = AttachParams::interactive_tty()
        .container(container.clone())
        .max_stdin_buf_size(CHUNK)
        .max_stdout_buf_size(CHUNK);
    let process = pods
        .exec(&start.pod, start.command.argv(), &params)
        .await
        .map_err(|error| status::refusal(&error))?;
    Ok(Opened {
        process,
        container,
        containers,
        _reserved: reserved,
    })
}

/// The verbs `pods/exec` takes over a WebSocket: the upgrade is a `get`, and the API
/// server also asks for `create` (what `kubectl exec` needs).
const EXEC_VERBS: [&str; 2] = ["create", "get"];

/// The verb of `pods/exec` on this Pod that `caller` lacks, if any (the portal's own
/// identity, in local mode, is what the request would use anyway).
async fn missing_exec_verb(
    state: &LiveState,
    caller: &Caller,
    start: &TerminalStart,
) -> Result<Option<&'static str>, String> {
    if *caller == Caller::Portal {
        return Ok(None);
    }
    for verb in EXEC_VERBS {
        let question = AccessQuestion {
            verb: verb.into(),
            group: String::new(),
            resource: "pods".into(),
            subresource: Some("exec".into()),
            namespace: Some(start.namespace.clone()),
            name: Some(start.pod.clone()),
        };
        let allowed = state
            .auth
            .reviews
            .allowed_within(caller, &question, state.limits.recheck)
            .await
            .map_err(|error| {
                format!("Portico could not ask whether you may open a terminal: {error}")
            })?;
        if !allowed {
            return Ok(Some(verb));
        }
    }
    Ok(None)
}

/// The container to run in (the one asked for, else the Pod's default) and the
/// containers one can run in. A person who may exec but not read the Pod names theirs.
async fn container_of(
    pods: &Api<Pod>,
    start: &TerminalStart,
) -> Result<(String, Vec<String>), String> {
    let pod = match pods.get(&start.pod).await {
        Ok(pod) => pod,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(format!(
                "Pod {} does not exist in namespace {}.",
                start.pod, start.namespace
            ));
        }
        Err(_) => {
            return match &start.container {
                Some(container) => Ok((container.clone(), vec![container.clone()])),
                None => Err(format!(
                    "Name a container: you may not read Pod {} for Portico to choose one.",
                    start.pod
                )),
            };
        }
    };
    // Init containers have finished (or not yet begun) by the time one could type.
    let running: Vec<_> = container::containers(&pod)
        .into_iter()
        .filter(|c| !c.init)
        .collect();
    let names: Vec<String> = running.iter().map(|c| c.name.clone()).collect();
    let chosen = match &start.container {
        Some(asked) if names.contains(asked) => asked.clone(),
        Some(asked) => {
            return Err(format!(
                "Pod {} has no container {asked}; it has {}.",
                start.pod,
                names.join(", ")
            ));
        }
        None => container::default_container(&pod, &running)
            .ok_or_else(|| format!("Pod {} has no containers.", start.pod))?,
    };
    Ok((chosen, names))
}

/// Says why the terminal did not open, and closes (the caller wrote the audit line).
async fn refuse(sink: &mut Sink, message: String) {
    let _ = send_event(sink, &TerminalEvent::Refused { message }).await;
    let _ = sent(sink, Message::Close(None)).await;
}

/// Why a terminal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// The command ended (its status came), or its output or the API server's
    /// stream did.
    Exited,
    /// kube did not give the streams asked for.
    NotAttached,
    PageClosed,
    PageGone,
    SignedOut,
    Withdrawn,
    Idle,
    Shutdown,
}

impl End {
    fn sentence(self, idle: Duration) -> String {
        let fixed = match self {
            End::Exited => "The command ended.",
            End::NotAttached => "Portico could not attach to the command.",
            End::PageClosed | End::PageGone => "The page closed the terminal.",
            End::SignedOut => {
                "Your sign-in ended (signed out, or it expired): the terminal is closed."
            }
            End::Withdrawn => {
                "Your permission to open terminals here was withdrawn: the terminal is closed."
            }
            End::Idle => {
                return format!(
                    "Nothing was typed for {}: the terminal is closed.",
                    spoken(idle)
                );
            }
            End::Shutdown => {
                "Portico is restarting: the terminal is closed. Open it again in a moment."
            }
        };
        fixed.to_string()
    }
}

/// A while, as people say it: "30 minutes", "1 minute", "45 seconds".
fn spoken(span: Duration) -> String {
    let seconds = span.as_secs();
    let (n, unit) = if seconds >= 60 && seconds.is_multiple_of(60) {
        (seconds / 60, "minute")
    } else {
        (seconds, "second")
    };
    let plural = if n == 1 { "" } else { "s" };
    format!("{n} {unit}{plural}")
}

/// Bytes that crossed, each way, for the audit line.
#[derive(Default)]
struct Counts {
    input: AtomicU64,
    output: AtomicU64,
    /// Milliseconds from the start to the last keystroke.
    last_input_ms: AtomicU64,
}

struct Terminal {
    state: LiveState,
    caller: Caller,
    headers: axum::http::HeaderMap,
    start: TerminalStart,
}

impl Terminal {
    async fn run(self, mut opened: Opened, mut sink: Sink, incoming: SplitStream<WebSocket>) {
        let began = Instant::now();
        let counts = Arc::new(Counts::default());
        let mut status = None;
        let end = self
            .attached(
                &mut opened,
                &mut sink,
                incoming,
                &counts,
                began,
                &mut status,
            )
            .await;
        // Closing the API server's stream hangs the command up; before anything
        // else, so a page slow to take the last words does not keep it running.
        opened.process.abort();
        let (code, message) = match end {
            End::Exited => {
                let code = status::exit_code(status.as_ref());
                (code, status::ended_sentence(code, status.as_ref()))
            }
            other => (None, other.sentence(self.state.limits.terminal_idle)),
        };
        if end != End::PageGone {
            let last = match end {
                // It never ran: a refusal, as the page shows one.
                End::NotAttached => TerminalEvent::Refused { message },
                _ => TerminalEvent::Ended { code, message },
            };
            let _ = send_event(&mut sink, &last).await;
            let _ = sent(&mut sink, Message::Close(None)).await;
        }
        tracing::info!(
            target: "portico::audit",
            who = self.caller.name(),
            namespace = %self.start.namespace,
            pod = %self.start.pod,
            container = %opened.container,
            command = %self.start.command.audited(),
            seconds = began.elapsed().as_secs(),
            bytes_in = counts.input.load(Ordering::Relaxed),
            bytes_out = counts.output.load(Ordering::Relaxed),
            exit_code = code,
            ended = ?end,
            "terminal session",
        );
    }

    /// From the command's start to its end, and why it ended; how the command
    /// said it ended, if it did, in `status`.
    async fn attached(
        &self,
        opened: &mut Opened,
        sink: &mut Sink,
        incoming: SplitStream<WebSocket>,
        counts: &Arc<Counts>,
        began: Instant,
        status: &mut Option<Status>,
    ) -> End {
        let (Some(stdin), Some(mut stdout), Some(mut resize), Some(exit)) = (
            opened.process.stdin(),
            opened.process.stdout(),
            opened.process.terminal_size(),
            opened.process.take_status(),
        ) else {
            // Asked for with a terminal: kube gives all four.
            return End::NotAttached;
        };
        let started = TerminalEvent::Started {
            container: opened.container.clone(),
            containers: opened.containers.clone(),
        };
        if !send_event(sink, &started).await {
            return End::PageGone;
        }
        let _ = resize.send(kube_size(self.start.size)).await;
        tracing::info!(container = %opened.container, "terminal opened");
        let mut input = tokio::spawn(
            carry_input(incoming, stdin, resize, counts.clone(), began)
                .instrument(tracing::Span::current()),
        );
        let exit = exit.fuse();
        tokio::pin!(exit);
        let end = self
            .pump(
                &mut stdout,
                sink,
                counts,
                began,
                &mut input,
                &mut exit,
                status,
            )
            .await;
        input.abort();
        if end == End::Exited && !exit.is_terminated() {
            // The output ended first: the status follows it on the same stream.
            *status = tokio::time::timeout(EXIT_STATUS, &mut exit)
                .await
                .ok()
                .flatten();
        }
        end
    }

    /// Output to the page until the terminal ends, and why it did.
    #[allow(clippy::too_many_arguments)]
    async fn pump(
        &self,
        stdout: &mut (impl tokio::io::AsyncRead + Unpin),
        sink: &mut Sink,
        counts: &Counts,
        began: Instant,
        input: &mut tokio::task::JoinHandle<End>,
        exit: &mut (impl std::future::Future<Output = Option<Status>> + Unpin),
        status: &mut Option<Status>,
    ) -> End {
        let mut buffer = vec![0u8; CHUNK];
        let mut pace = Pace::new(OUTPUT_PER_SECOND);
        let mut ping = tokio::time::interval(PING_EVERY);
        let mut session_check = tokio::time::interval(SESSION_CHECK);
        let every = self.state.limits.recheck;
        let mut recheck = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut sign_outs = self
            .state
            .auth
            .identity
            .sessions
            .as_ref()
            .map(|sessions| sessions.sign_outs());
        let shutdown = self.state.shutdown.begun();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                read = stdout.read(&mut buffer) => {
                    let n = match read {
                        Ok(0) | Err(_) => return End::Exited,
                        Ok(n) => n,
                    };
                    let Some(bytes) = buffer.get(..n) else { return End::Exited };
                    if !sent(sink, Message::Binary(bytes.to_vec().into())).await {
                        return End::PageGone;
                    }
                    counts.output.fetch_add(n as u64, Ordering::Relaxed);
                    pace.spend(n).await;
                }
                // kube's stream to the API server ended: with the command's status,
                // or broken (then its output never reaches its end).
                ended = &mut *exit => {
                    *status = ended;
                    return match drain(stdout, &mut buffer, sink, counts).await {
                        true => End::Exited,
                        false => End::PageGone,
                    };
                }
                // Returned from at once: a finished task is never polled again.
                _ = &mut *input => return End::PageClosed,
                Some(Ok(())) = async { match sign_outs.as_mut() {
                    Some(rx) => Some(rx.changed().await),
                    None => std::future::pending().await,
                } } => {
                    session_check.reset_immediately();
                }
                _ = session_check.tick() => {
                    if !crate::live::views::open::signed_in(&self.state, &self.caller, &self.headers) {
                        return End::SignedOut;
                    }
                    let last = Duration::from_millis(counts.last_input_ms.load(Ordering::Relaxed));
                    if began.elapsed().saturating_sub(last) >= self.state.limits.terminal_idle {
                        return End::Idle;
                    }
                }
                _ = recheck.tick() => {
                    // A review that fails (the API server away a moment) keeps the terminal.
                    if let Ok(Some(_)) = missing_exec_verb(&self.state, &self.caller, &self.start).await {
                        return End::Withdrawn;
                    }
                }
                _ = ping.tick() => {
                    if !sent(sink, Message::Ping(Default::default())).await {
                        return End::PageGone;
                    }
                }
                _ = &mut shutdown => return End::Shutdown,
            }
        }
    }
}

/// The output already in the pipe once kube's stream ended (at most its buffer: no
/// more comes), to the page; false if the page is gone.
async fn drain(
    stdout: &mut (impl tokio::io::AsyncRead + Unpin),
    buffer: &mut [u8],
    sink: &mut Sink,
    counts: &Counts,
) -> bool {
    while let Some(Ok(n)) = stdout.read(buffer).now_or_never() {
        let Some(bytes) = buffer.get(..n).filter(|bytes| !bytes.is_empty()) else {
            break;
        };
        if !sent(sink, Message::Binary(bytes.to_vec().into())).await {
            return false;
        }
        counts.output.fetch_add(n as u64, Ordering::Relaxed);
    }
    true
}

/// Keystrokes and resizes from the page into the command, paced, until the page
/// closes its side. Apart from the output: a command that reads no input must not
/// stop its output from reaching the page.
async fn carry_input(
    mut incoming: SplitStream<WebSocket>,
    mut stdin: impl tokio::io::AsyncWrite + Unpin,
    mut resize: futures::channel::mpsc::Sender<kube::api::TerminalSize>,
    counts: Arc<Counts>,
    began: Instant,
) -> End {
    let mut pace = Pace::new(INPUT_PER_SECOND);
    while let Some(frame) = incoming.next().await {
        match frame {
            Ok(Message::Binary(bytes)) => {
                counts
                    .input
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                let at = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
                counts.last_input_ms.store(at, Ordering::Relaxed);
                if stdin.write_all(&bytes).await.is_err() {
                    break;
                }
                pace.spend(bytes.len()).await;
            }
            Ok(Message::Text(text)) => match serde_json::from_str::<TerminalInput>(text.as_str()) {
                Ok(TerminalInput::Resize { size }) => {
                    let _ = resize.send(kube_size(size.clamped())).await;
                }
                // A page that says something else is not one Portico wrote.
                _ => break,
            },
            Ok(Message::Close(_)) | Err(_) => break,
            Ok(_) => {}
        }
    }
    End::PageClosed
}

fn kube_size(size: TerminalSize) -> kube::api::TerminalSize {
    kube::api::TerminalSize {
        width: size.cols,
        height: size.rows,
    }
}

/// At most `per_second` bytes a second: past that, the next second is waited for.
struct Pace {
    per_second: usize,
    window: tokio::time::Instant,
    spent: usize,
}

impl Pace {
    fn new(per_second: usize) -> Self {
        Self {
            per_second,
            window: tokio::time::Instant::now(),
            spent: 0,
        }
    }

    async fn spend(&mut self, bytes: usize) {
        if self.window.elapsed() >= Duration::from_secs(1) {
            self.window = tokio::time::Instant::now();
            self.spent = 0;
        }
        self.spent += bytes;
        if self.spent >= self.per_second {
            tokio::time::sleep_until(self.window + Duration::from_secs(1)).await;
            self.window = tokio::time::Instant::now();
            self.spent = 0;
        }
    }
}

async fn send_event(sink: &mut Sink, event: &TerminalEvent) -> bool {
    match serde_json::to_string(event) {
        Ok(text) => sent(sink, Message::Text(text.into())).await,
        Err(_) => false,
    }
}

/// Sends `message`; false when the page is gone or has not taken it within
/// [`SEND_TIMEOUT`].
async fn sent(sink: &mut Sink, message: Message) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, sink.send(message)).await,
        Ok(Ok(()))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_spans_are_said_as_people_say_them() {
        assert_eq!(spoken(Duration::from_secs(1800)), "30 minutes");
        assert_eq!(spoken(Duration::from_secs(60)), "1 minute");
        assert_eq!(spoken(Duration::from_secs(3)), "3 seconds");
        assert_eq!(spoken(Duration::from_secs(90)), "90 seconds");
    }

    #[tokio::test(start_paused = true)]
    async fn pace_waits_out_the_second_once_its_bytes_are_spent() {
        let mut pace = Pace::new(1000);
        let start = tokio::time::Instant::now();
        pace.spend(600).await;
        assert_eq!(start.elapsed(), Duration::ZERO);
        pace.spend(600).await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        pace.spend(10).await;
        assert_eq!(start.elapsed(), Duration::from_secs(1));
    }
}
