//! A live log view: one container's log, read with the viewer's own client (so the
//! API server decides, and audits, who reads what) after an access review for
//! `pods/log` `get`, followed as it grows and sent within [`log_flow`]'s bounds.
//! Counts among the person's live views while open.
//!
//! [`log_flow`]: crate::live::logs::flow

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use futures::{AsyncBufRead, AsyncBufReadExt, Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};
use portico_core::live::protocol::{LogContainer, LogQuery};
use portico_core::live::tagged_line;
use tracing::Instrument;

use crate::auth::access::AccessQuestion;
use crate::cluster::caller::Caller;
use crate::cluster::error::{Failure, failure};
use crate::live::LiveState;
use crate::live::budgets::limits::{LimitRefused, StreamPermit};
use crate::live::budgets::memory::Reservation;
use crate::live::logs::flow::{Bounds, Flow, Queue, batches};
use crate::live::logs::lines::Lines;
use crate::live::views::open::Refusal;

/// How often a container that has not started yet is asked for its log again.
pub(in crate::live) const WAITING_RETRY: Duration = Duration::from_secs(2);

/// What a log view sends, in order: `Opened`, then lines (or `Waiting` while the
/// container has not started), and `Ended` last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogUpdate {
    Opened {
        container: String,
        containers: Vec<LogContainer>,
    },
    Lines {
        lines: Vec<String>,
        skipped: u64,
    },
    /// The log cannot be read yet; a sentence. Lines follow once it can.
    Waiting(String),
    Ended(String),
}

/// Why a log view could not open, or why it ended early; the text is shown.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("namespace, pod and container must be DNS-style names")]
    InvalidQuery,
    #[error(transparent)]
    Limit(#[from] LimitRefused),
    #[error("You may not read logs of pods in namespace {0} (pods/log get).")]
    Forbidden(String),
    #[error("Portico could not ask the API server whether you may read this log: {0}")]
    Review(#[source] kube::Error),
    #[error("Portico cannot act as you towards the API server: {0}")]
    Client(#[source] kube::Error),
    #[error("Pod {pod} does not exist in namespace {namespace}.")]
    NoPod { namespace: String, pod: String },
    #[error("Pod {pod} has no container named {container}.")]
    NoContainer { pod: String, container: String },
    #[error("Pod {0} has no containers.")]
    NoContainers(String),
    #[error(
        "Container {0} has no previous run to show: it has not restarted since the Pod was made, or the node no longer keeps that log."
    )]
    NoPrevious(String),
    #[error("Container {container} has not started yet: {detail}")]
    NotStarted { container: String, detail: String },
    #[error("The API server would not give the log: {0}")]
    Api(String),
}

impl LogError {
    fn status(&self) -> StatusCode {
        match self {
            Self::InvalidQuery | Self::NoContainer { .. } | Self::NoContainers(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::Limit(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NoPod { .. } | Self::NoPrevious(_) => StatusCode::NOT_FOUND,
            Self::NotStarted { .. } => StatusCode::CONFLICT,
            Self::Review(_) | Self::Client(_) | Self::Api(_) => StatusCode::BAD_GATEWAY,
        }
    }

    /// The API server's refusal of a log request, in words about this container.
    pub(in crate::live) fn of_request(
        error: kube::Error,
        namespace: &str,
        container: &str,
    ) -> Self {
        let message = match &error {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        };
        match failure(&error) {
            Failure::Forbidden | Failure::Unauthorized => Self::Forbidden(namespace.to_string()),
            // 400s name what is wrong only in their text.
            Failure::Invalid if message.contains("previous terminated container") => {
                Self::NoPrevious(container.to_string())
            }
            Failure::Invalid
                if message.contains("is waiting to start")
                    // kubelet's own status of the Pod lists no such container yet
                    // (the moment after it took the Pod up).
                    || message.contains("is not available")
                    || message.contains("ContainerCreating")
                    || message.contains("PodInitializing")
                    // Not placed on a node yet.
                    || message.contains("does not have a host assigned") =>
            {
                Self::NotStarted {
                    container: container.to_string(),
                    detail: message,
                }
            }
            // The node has not taken up a Pod it was just given: kubelet knows no such
            // Pod yet, and the API server passes its 404 on in these words (a deleted
            // Pod reads `pods "NAME" not found` instead).
            Failure::NotFound if message.contains("could not find the requested resource") => {
                Self::NotStarted {
                    container: container.to_string(),
                    detail: "its node has not taken up the Pod yet".into(),
                }
            }
            _ => Self::Api(message),
        }
    }
}

impl From<LogError> for Refusal {
    fn from(error: LogError) -> Self {
        (error.status(), error.to_string())
    }
}

/// Opens a log view for `caller`: checks first (valid names, the person's live view
/// limit, `pods/log` `get`, the Pod and container), then the stream.
/// `headers` are the request's (in token mode the view ends with the session).
#[tracing::instrument(name = "log_view", skip_all, fields(
    caller = caller.name(), namespace = %query.namespace, pod = %query.pod,
))]
pub async fn open(
    state: &LiveState,
    caller: Caller,
    query: LogQuery,
    headers: HeaderMap,
) -> Result<impl Stream<Item = LogUpdate> + Send + use<>, Refusal> {
    if !query.is_valid() {
        return Err(LogError::InvalidQuery.into());
    }
    let Admitted {
        permit,
        reserved,
        bounds,
        pods,
    } = admit(state, &caller, &query.namespace).await?;
    let (container, containers) = container_of(&pods, &query).await?;
    let params = LogParams {
        container: Some(container.clone()),
        // A previous run's log does not grow.
        follow: !query.previous,
        previous: query.previous,
        tail_lines: query.tail_lines.map(i64::from),
        timestamps: false,
        ..LogParams::default()
    };
    let recheck = Recheck {
        state: state.clone(),
        caller,
        headers,
        namespace: query.namespace.clone(),
    };
    let (pod, namespace) = (query.pod, query.namespace);
    let span = tracing::Span::current();
    let updates = async_stream::stream! {
        let (_permit, _reserved) = (permit, reserved);
        yield LogUpdate::Opened { container: container.clone(), containers };
        // A container that has not started yet has no log: ask again until it has.
        let reader = loop {
            match pods.log_stream(&pod, &params).await {
                Ok(reader) => break Ok(reader),
                Err(error) => match LogError::of_request(error, &namespace, &container) {
                    waiting @ LogError::NotStarted { .. } => {
                        yield LogUpdate::Waiting(waiting.to_string());
                        tokio::time::sleep(WAITING_RETRY).await;
                    }
                    other => break Err(other),
                },
            }
        };
        let reader = match reader {
            Ok(reader) => reader,
            Err(error) => {
                yield LogUpdate::Ended(error.to_string());
                return;
            }
        };
        let queue = Queue::new(&bounds);
        let ended = if params.follow {
            format!("Container {container} stopped; its log ends here.")
        } else {
            format!("End of the log of container {container}'s previous run.")
        };
        let following = Following { pods: pods.clone(), namespace: namespace.clone(), pod: pod.clone(), container: container.clone(), params: params.clone(), tag: false };
        let read_into = queue.clone();
        let reading = tokio::spawn(async move {
            let reason = following.run(reader, &read_into).await.err().unwrap_or(ended);
            read_into.end(reason);
        }.instrument(span));
        let _stop_reading = AbortOnDrop(reading);
        let mut flow = std::pin::pin!(batches(queue, bounds));
        let mut ticks = recheck.ticks();
        loop {
            tokio::select! {
                item = flow.next() => match item {
                    Some(Flow::Batch { lines, skipped }) => yield LogUpdate::Lines { lines, skipped },
                    Some(Flow::Ended(reason)) => {
                        yield LogUpdate::Ended(reason);
                        break;
                    }
                    None => break,
                },
                _ = ticks.tick() => {
                    if !recheck.still_allowed().await {
                        yield LogUpdate::Ended(WITHDRAWN.into());
                        break;
                    }
                }
            }
        }
    };
    Ok(updates.take_until(state.shutdown.begun()))
}

/// What a log view holds while open, once admitted.
pub(in crate::live) struct Admitted {
    /// Its place among the person's live views.
    pub permit: StreamPermit,
    /// What it may hold, set aside in the person's memory budget (the one their live
    /// tables count against).
    pub reserved: Reservation,
    pub bounds: Bounds,
    /// The namespace's Pods, read as the person.
    pub pods: Api<Pod>,
}

/// Admits a log view of `caller` in `namespace`: a place among their live views, its
/// bounds in their memory budget, `pods/log` `get`, and their own client.
pub(in crate::live) async fn admit(
    state: &LiveState,
    caller: &Caller,
    namespace: &str,
) -> Result<Admitted, LogError> {
    let permit = state.streams.acquire(caller.person(), &state.limits)?;
    let bounds = Bounds::default();
    let reserved = state.hub.reserve(&caller.person(), bounds.reserved())?;
    if !may_read_logs(state, caller, namespace).await? {
        return Err(LogError::Forbidden(namespace.to_string()));
    }
    let client = state
        .auth
        .pool
        .for_caller(caller)
        .map_err(LogError::Client)?;
    Ok(Admitted {
        permit,
        reserved,
        bounds,
        pods: Api::namespaced(client, namespace),
    })
}

/// Why an open view stopped at a re-check.
pub(in crate::live) const WITHDRAWN: &str =
    "Your permission to read this log was withdrawn, or your sign-in ended; this view has stopped.";

/// Whether `caller` may `get` `pods/log` in `namespace` (the portal's own identity
/// is not asked: it is the identity the request would use anyway).
pub(in crate::live) async fn may_read_logs(
    state: &LiveState,
    caller: &Caller,
    namespace: &str,
) -> Result<bool, LogError> {
    if *caller == Caller::Portal {
        return Ok(true);
    }
    let question = AccessQuestion {
        verb: "get".into(),
        group: String::new(),
        resource: "pods".into(),
        subresource: Some("log".into()),
        namespace: Some(namespace.to_string()),
        name: None,
    };
    state
        .auth
        .reviews
        .allowed_within(caller, &question, state.limits.recheck)
        .await
        .map_err(LogError::Review)
}

/// The container to read (the one asked for, else the Pod's default) and the
/// containers the Pod has. A viewer who may read logs but not the Pod itself gets
/// the container asked for and no list.
async fn container_of(
    pods: &Api<Pod>,
    query: &LogQuery,
) -> Result<(String, Vec<LogContainer>), LogError> {
    let pod = match pods.get_opt(&query.pod).await {
        Ok(Some(pod)) => pod,
        Ok(None) => {
            return Err(LogError::NoPod {
                namespace: query.namespace.clone(),
                pod: query.pod.clone(),
            });
        }
        Err(e) if matches!(failure(&e), Failure::Forbidden) => {
            let container = query
                .container
                .clone()
                .ok_or_else(|| LogError::NoContainers(query.pod.clone()))?;
            return Ok((container, Vec::new()));
        }
        Err(e) => return Err(LogError::Api(e.to_string())),
    };
    let containers = containers(&pod);
    let chosen = match &query.container {
        Some(name) if containers.iter().any(|c| &c.name == name) => name.clone(),
        Some(name) => {
            return Err(LogError::NoContainer {
                pod: query.pod.clone(),
                container: name.clone(),
            });
        }
        None => default_container(&pod, &containers)
            .ok_or_else(|| LogError::NoContainers(query.pod.clone()))?,
    };
    Ok((chosen, containers))
}

/// Init containers first (they run first), then the others, with their restarts.
pub fn containers(pod: &Pod) -> Vec<LogContainer> {
    let status = pod.status.as_ref();
    let restarts = |statuses: Option<&Vec<k8s_openapi::api::core::v1::ContainerStatus>>,
                    name: &str| {
        statuses
            .and_then(|s| s.iter().find(|c| c.name == name))
            .map_or(0, |c| c.restart_count)
    };
    let Some(spec) = pod.spec.as_ref() else {
        return Vec::new();
    };
    let init = spec.init_containers.iter().flatten().map(|c| LogContainer {
        name: c.name.clone(),
        init: true,
        restarts: restarts(
            status.and_then(|s| s.init_container_statuses.as_ref()),
            &c.name,
        ),
    });
    let main = spec.containers.iter().map(|c| LogContainer {
        name: c.name.clone(),
        init: false,
        restarts: restarts(status.and_then(|s| s.container_statuses.as_ref()), &c.name),
    });
    init.chain(main).collect()
}

/// The container `kubectl logs` would pick: the one the
/// `kubectl.kubernetes.io/default-container` annotation names, else the first.
pub(crate) fn default_container(pod: &Pod, containers: &[LogContainer]) -> Option<String> {
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/default-container"))
        .filter(|name| containers.iter().any(|c| &c.name == *name));
    annotated
        .cloned()
        .or_else(|| containers.iter().find(|c| !c.init).map(|c| c.name.clone()))
        .or_else(|| containers.first().map(|c| c.name.clone()))
}

/// One container's log being followed, for as long as the container runs.
pub(in crate::live) struct Following {
    pub pods: Api<Pod>,
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub params: LogParams,
    /// Each line tagged with the Pod and container (a workload's merged log; the
    /// params ask for kubelet's timestamps).
    pub tag: bool,
}

impl Following {
    /// Reads `first` into `queue`, then, while following: kubelet ends a followed
    /// log at once when the container was not running at the moment the request
    /// reached it (created, not started yet: a new Pod's first second), so a log
    /// that ends while its container runs is followed again (at most once a second;
    /// lines already shown are not asked for again). A followed stream that breaks
    /// off (the API server's connection to kubelet reset under load) is followed
    /// again the same way; lines written in the gap may be missed. `Ok` once the
    /// container stopped, or why the log broke off (unfollowed, or [`MAX_BREAKS`]
    /// times in a row with nothing read between).
    pub(in crate::live) async fn run(
        mut self,
        first: impl AsyncBufRead,
        queue: &Queue,
    ) -> Result<(), String> {
        let tag = self.tag.then(|| (self.pod.clone(), self.container.clone()));
        let tag = tag
            .as_ref()
            .map(|(pod, container)| (pod.as_str(), container.as_str()));
        let mut breaks = Breaks::default();
        let mut shown = breaks.count(read(first, queue, tag).await, self.params.follow)?;
        while self.params.follow && self.runs_or_is_starting().await {
            if shown > 0 {
                self.params.tail_lines = Some(0);
            }
            tokio::time::sleep(REFOLLOW_EVERY).await;
            let reader = match self.pods.log_stream(&self.pod, &self.params).await {
                Ok(reader) => reader,
                Err(error) => match LogError::of_request(error, &self.namespace, &self.container) {
                    // Created but not started: kubelet's word for the next moments.
                    LogError::NotStarted { .. } => continue,
                    other => return Err(other.to_string()),
                },
            };
            shown += breaks.count(read(reader, queue, tag).await, true)?;
        }
        Ok(())
    }

    /// Whether the container runs now, or is about to for the first time (as the API
    /// server last heard from kubelet, which tells it a moment after the log request
    /// found the container created: without this a new Pod's log could end at once).
    async fn runs_or_is_starting(&self) -> bool {
        self.pods
            .get(&self.pod)
            .await
            .is_ok_and(|pod| follow_again(&pod, &self.container))
    }
}

/// Whether a followed log that ended should be followed again: its container runs or
/// is about to for the first time, or the Pod is still pending with no word of it yet
/// (kubelet answers a log request of a Pod it has just been given with nothing).
fn follow_again(pod: &Pod, container: &str) -> bool {
    let status = pod.status.as_ref();
    let of_container = status
        .into_iter()
        .flat_map(|s| {
            [
                &s.init_container_statuses,
                &s.container_statuses,
                &s.ephemeral_container_statuses,
            ]
        })
        .flatten()
        .flatten()
        .find(|c| c.name == container);
    match of_container {
        Some(container) => runs_or_is_starting(container),
        None => status
            .and_then(|s| s.phase.as_deref())
            .is_none_or(|p| p == "Pending"),
    }
}

/// Running, or being created to run for the first time (never restarted, never
/// ended). A container waiting for anything else (an image that cannot be pulled, a
/// bad configuration) is not followed again: it may wait forever.
fn runs_or_is_starting(status: &k8s_openapi::api::core::v1::ContainerStatus) -> bool {
    let state = status.state.as_ref();
    let being_created = state
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.reason.as_deref())
        .is_some_and(|reason| matches!(reason, "ContainerCreating" | "PodInitializing"));
    let first_start = status.restart_count == 0
        && status
            .last_state
            .as_ref()
            .is_none_or(|s| s.terminated.is_none())
        && being_created;
    state.is_some_and(|s| s.running.is_some()) || first_start
}

/// Breaks in a row, with nothing read between, after which a followed log ends.
const MAX_BREAKS: u32 = 5;

/// A followed log's breaks in a row.
#[derive(Default)]
struct Breaks(u32);

impl Breaks {
    /// The bytes `read` got; its break passed over while `follow`ing, unless it is
    /// the [`MAX_BREAKS`]th in a row with nothing read between.
    fn count(
        &mut self,
        read: Result<usize, (usize, String)>,
        follow: bool,
    ) -> Result<usize, String> {
        match read {
            Ok(bytes) => {
                self.0 = 0;
                Ok(bytes)
            }
            Err((bytes, why)) => {
                self.0 = if bytes > 0 { 1 } else { self.0 + 1 };
                if !follow || self.0 >= MAX_BREAKS {
                    return Err(why);
                }
                tracing::debug!(%why, "a followed log broke off: following it again");
                Ok(bytes)
            }
        }
    }
}

/// How soon a log that ended while its container runs is followed again.
const REFOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Reads the log as it comes, into `queue` (which drops what the page cannot take),
/// so a slow page never holds up the API server's stream; each line tagged with
/// `(pod, container)` when given. The bytes read, or those and why the stream broke
/// off.
async fn read(
    reader: impl AsyncBufRead,
    queue: &Queue,
    tag: Option<(&str, &str)>,
) -> Result<usize, (usize, String)> {
    let tagged = |line: String| match tag {
        Some((pod, container)) => tagged_line::tag(&line, pod, container),
        None => line,
    };
    let mut reader = std::pin::pin!(reader);
    let mut lines = Lines::default();
    let mut total = 0;
    loop {
        // A full queue stops the reading: the API server (and kubelet) wait, rather
        // than the portal reading and dropping at full speed.
        queue.room().await;
        let (read, out) = match reader.as_mut().fill_buf().await {
            Ok([]) => break,
            Ok(chunk) => {
                let mut out = Vec::new();
                lines.push(chunk, &mut |line| out.push(tagged(line)));
                (chunk.len(), out)
            }
            Err(error) => {
                tracing::debug!(%error, "log stream broke off");
                queue.push(lines.finish().into_iter().map(tagged));
                return Err((total, format!("The log stream broke off: {error}")));
            }
        };
        reader.as_mut().consume(read);
        total += read;
        queue.push(out);
    }
    queue.push(lines.finish().into_iter().map(tagged));
    Ok(total)
}

/// Stops the reading task when the view goes away.
pub(in crate::live) struct AbortOnDrop(pub tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// The task ended by itself (its container stopped, or its log broke off).
    pub(in crate::live) fn is_finished(&self) -> bool {
        self.0.is_finished()
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether an open view may go on: still signed in (token mode), still allowed.
pub(in crate::live) struct Recheck {
    pub state: LiveState,
    pub caller: Caller,
    pub headers: HeaderMap,
    pub namespace: String,
}

impl Recheck {
    /// When to re-check: every `limits.recheck`, the first after one period.
    pub(in crate::live) fn ticks(&self) -> tokio::time::Interval {
        let every = self.state.limits.recheck;
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks
    }

    pub(in crate::live) async fn still_allowed(&self) -> bool {
        if !crate::live::views::open::signed_in(&self.state, &self.caller, &self.headers) {
            return false;
        }
        let answer = match may_read_logs(&self.state, &self.caller, &self.namespace).await {
            Ok(allowed) => Ok(allowed),
            Err(LogError::Review(error)) => Err(error),
            // No client for the caller: nothing more may be read as them.
            Err(_) => return false,
        };
        crate::live::views::access::keeps_view(&self.state, &self.caller, &self.headers, answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_followed_log_outlives_breaks_until_five_in_a_row_read_nothing() {
        let broke = |bytes| Err((bytes, "broke".to_string()));
        let mut breaks = Breaks::default();
        assert_eq!(breaks.count(Ok(10), true), Ok(10));
        for _ in 0..MAX_BREAKS - 1 {
            assert_eq!(breaks.count(broke(0), true), Ok(0));
        }
        // Something read resets the count.
        assert_eq!(breaks.count(broke(7), true), Ok(7));
        for _ in 0..MAX_BREAKS - 2 {
            assert_eq!(breaks.count(broke(0), true), Ok(0));
        }
        assert_eq!(breaks.count(broke(0), true), Err("broke".into()));
        // A log not followed ends at its first break.
        assert_eq!(
            Breaks::default().count(broke(3), false),
            Err("broke".into())
        );
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("a pod")
    }

    #[test]
    fn the_default_container_is_the_annotated_one_else_the_first_that_is_not_init() {
        let spec = serde_json::json!({
            "initContainers": [{"name": "setup"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}]
        });
        let plain = pod(serde_json::json!({"spec": spec, "status": {
            "containerStatuses": [{"name": "sidecar", "restartCount": 3, "image": "", "imageID": "", "ready": true}]
        }}));
        let list = containers(&plain);
        assert_eq!(
            list.iter()
                .map(|c| (c.name.as_str(), c.init, c.restarts))
                .collect::<Vec<_>>(),
            [("setup", true, 0), ("app", false, 0), ("sidecar", false, 3)]
        );
        assert_eq!(default_container(&plain, &list).as_deref(), Some("app"));
        let annotated = pod(
            serde_json::json!({"spec": spec, "metadata": {"annotations": {
                "kubectl.kubernetes.io/default-container": "sidecar"
            }}}),
        );
        assert_eq!(
            default_container(&annotated, &containers(&annotated)).as_deref(),
            Some("sidecar")
        );
    }

    #[test]
    fn refusals_of_a_log_request_are_said_about_the_container() {
        let api = |code: u16, message: &str| {
            kube::Error::Api(Box::new(
                serde_json::from_value(serde_json::json!({
                    "code": code, "message": message, "reason": "BadRequest", "status": "Failure"
                }))
                .expect("status"),
            ))
        };
        let none = LogError::of_request(
            api(
                400,
                "previous terminated container \"app\" in pod \"web\" not found",
            ),
            "team",
            "app",
        );
        assert!(
            matches!(none, LogError::NoPrevious(ref c) if c == "app"),
            "{none}"
        );
        assert!(none.to_string().contains("no previous run"));
        let waiting = LogError::of_request(
            api(
                400,
                "container \"app\" in pod \"web\" is waiting to start: ContainerCreating",
            ),
            "team",
            "app",
        );
        assert!(matches!(waiting, LogError::NotStarted { .. }), "{waiting}");
        let unlisted = LogError::of_request(
            api(400, "container \"app\" in pod \"web\" is not available"),
            "team",
            "app",
        );
        assert!(
            matches!(unlisted, LogError::NotStarted { .. }),
            "{unlisted}"
        );
        let not_taken_up = LogError::of_request(
            api(
                404,
                "the server could not find the requested resource ( pods/log web)",
            ),
            "team",
            "app",
        );
        assert!(
            matches!(not_taken_up, LogError::NotStarted { .. }),
            "{not_taken_up}"
        );
        let gone = LogError::of_request(api(404, "pods \"web\" not found"), "team", "app");
        assert!(matches!(gone, LogError::Api(_)), "{gone}");
        let forbidden = LogError::of_request(api(403, "forbidden"), "team", "app");
        assert_eq!(
            forbidden.to_string(),
            "You may not read logs of pods in namespace team (pods/log get)."
        );
    }

    #[test]
    fn a_log_is_followed_again_while_its_container_runs_or_first_starts() {
        let status = |state: serde_json::Value,
                      restarts: i32|
         -> k8s_openapi::api::core::v1::ContainerStatus {
            serde_json::from_value(
                serde_json::json!({"name": "c", "image": "", "imageID": "", "ready": false,
                "restartCount": restarts, "state": state}),
            )
            .expect("status")
        };
        let pod = |phase: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p"}, "status": {"phase": phase}}))
            .expect("pod")
        };
        assert!(
            follow_again(&pod("Pending"), "c"),
            "a new Pod kubelet has not reported on"
        );
        assert!(!follow_again(&pod("Succeeded"), "c"));
        // An init container that finished is not followed again while the Pod pends.
        let init_done: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p"}, "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "init", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0}}}]}}))
        .expect("pod");
        assert!(!follow_again(&init_done, "init"));
        assert!(runs_or_is_starting(&status(
            serde_json::json!({"running": {}}),
            0
        )));
        assert!(runs_or_is_starting(&status(
            serde_json::json!({"waiting": {"reason": "ContainerCreating"}}),
            0
        )));
        assert!(!runs_or_is_starting(&status(
            serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            3
        )));
        assert!(!runs_or_is_starting(&status(
            serde_json::json!({"waiting": {"reason": "ImagePullBackOff"}}),
            0
        )));
        assert!(!runs_or_is_starting(&status(
            serde_json::json!({"terminated": {"exitCode": 0}}),
            0
        )));
    }
}
