//! A workload's log, stern-style: every container of every Pod a label selector
//! matches, merged into one view and ordered by kubelet's timestamps within each
//! batch, each line tagged with its Pod and container ([`tagged_line`]). Pods are
//! watched as the person, so a Pod that starts is followed and one that goes ends with
//! a note. One view among the person's, one queue and one rate however many Pods; each
//! container's reading sets aside what it may hold in the person's memory budget.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, LogParams};
use kube::runtime::{WatchStreamExt, watcher};
use portico_core::live::protocol::WorkloadLogQuery;
use portico_core::live::tagged_line;

use crate::cluster::caller::Caller;
use crate::cluster::error::{Failure, failure};
use crate::live::LiveState;
use crate::live::budgets::memory::Reservation;
use crate::live::logs::container::{
    AbortOnDrop, Admitted, Following, LogError, LogUpdate, Recheck, WAITING_RETRY, WITHDRAWN,
    admit, containers,
};
use crate::live::logs::flow::{Flow, Queue, batches};
use crate::live::logs::lines::MAX_LINE;
use crate::live::views::open::Refusal;

/// Containers one view follows at most: a workload's, not a namespace's.
const MOST_CONTAINERS: usize = 64;
/// What one container's reading holds beyond the shared queue: a line being cut.
const PER_CONTAINER: usize = 2 * MAX_LINE;
/// How often a container being created is asked for its log before its reading gives
/// up (at [`WAITING_RETRY`] apart: a minute).
const MOST_TRIES: u32 = 30;

/// Opens a workload's log for `caller`: the checks of a log view (valid query, the
/// person's view limit and memory budget, `pods/log` `get`), and listing the Pods as
/// them; then the merged stream.
#[tracing::instrument(name = "workload_log_view", skip_all, fields(
    caller = caller.name(), namespace = %query.namespace, selector = %query.selector,
))]
pub async fn open(
    state: &LiveState,
    caller: Caller,
    query: WorkloadLogQuery,
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
    // Asked first, so a person who may read logs but not list Pods is told at once.
    pods.list_metadata(&ListParams::default().labels(&query.selector).limit(1))
        .await
        .map_err(|error| listing_refused(error, &query.namespace))?;
    let recheck = Recheck {
        state: state.clone(),
        caller: caller.clone(),
        headers,
        namespace: query.namespace.clone(),
    };
    let live = state.clone();
    let updates = async_stream::stream! {
        let (_permit, _reserved) = (permit, reserved);
        yield LogUpdate::Opened { container: String::new(), containers: Vec::new() };
        let queue = Queue::new(&bounds);
        let mut followed = Followed {
            state: live,
            person: caller.person(),
            pods: pods.clone(),
            namespace: query.namespace.clone(),
            tail: query.tail_lines,
            queue: queue.clone(),
            by_pod: BTreeMap::new(),
            refused: BTreeSet::new(),
            listing: None,
            listed_once: false,
        };
        let config = watcher::Config::default().labels(&query.selector);
        let mut events = std::pin::pin!(watcher(pods, config).default_backoff());
        let mut flow = std::pin::pin!(batches(queue.clone(), bounds));
        let mut ticks = recheck.ticks();
        loop {
            tokio::select! {
                item = flow.next() => match item {
                    Some(Flow::Batch { mut lines, skipped }) => {
                        // Pods write at once; a batch reads in the order they wrote.
                        lines.sort_by_cached_key(|line| tagged_line::time_key(line));
                        yield LogUpdate::Lines { lines, skipped };
                    }
                    Some(Flow::Ended(reason)) => {
                        yield LogUpdate::Ended(reason);
                        break;
                    }
                    None => break,
                },
                event = events.next() => match event {
                    Some(Ok(event)) => followed.on(event),
                    Some(Err(watcher::Error::WatchFailed(error) | watcher::Error::InitialListFailed(error)))
                        if matches!(failure(&error), Failure::Forbidden | Failure::Unauthorized) =>
                    {
                        // At once, not after the queued lines: nothing more is read as them.
                        followed.by_pod.clear();
                        yield LogUpdate::Ended(format!(
                            "You may no longer list and watch Pods in namespace {}; this view has stopped.",
                            query.namespace
                        ));
                        break;
                    }
                    // Anything else is retried by the watcher, after a pause.
                    Some(Err(error)) => tracing::debug!(%error, "watching the workload's Pods"),
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

/// A refusal to list the workload's Pods, in words.
fn listing_refused(error: kube::Error, namespace: &str) -> Refusal {
    match failure(&error) {
        Failure::Forbidden | Failure::Unauthorized => (
            axum::http::StatusCode::FORBIDDEN,
            format!(
                "You may not list Pods in namespace {namespace} (pods list), which a workload's log follows."
            ),
        ),
        Failure::Invalid => (
            axum::http::StatusCode::BAD_REQUEST,
            format!("The API server refused the Pods' selector: {error}"),
        ),
        _ => LogError::Api(error.to_string()).into(),
    }
}

/// The containers being followed, by Pod, and what the watch of the Pods says of them.
struct Followed {
    state: LiveState,
    person: Option<String>,
    pods: Api<Pod>,
    namespace: String,
    /// Lines back to start from in the Pods there when the view opened.
    tail: Option<u32>,
    queue: Arc<Queue>,
    by_pod: BTreeMap<String, PodReaders>,
    /// Pods already told they are not followed (the bound or the budget), told once.
    refused: BTreeSet<String>,
    /// The Pods a (re)listing has named so far.
    listing: Option<BTreeSet<String>>,
    listed_once: bool,
}

/// The readings of one Pod (by its uid: a Pod made again under the same name, as a
/// StatefulSet does, is another Pod).
#[derive(Default)]
struct PodReaders {
    uid: String,
    readers: Vec<Reader>,
}

/// One container's reading, and the restarts it had when it began.
struct Reader {
    container: String,
    restarts: i32,
    /// Set once the log could be read (the container had started).
    read: Arc<AtomicBool>,
    reading: AbortOnDrop,
}

impl Followed {
    fn on(&mut self, event: watcher::Event<Pod>) {
        match event {
            watcher::Event::Init => self.listing = Some(BTreeSet::new()),
            watcher::Event::InitApply(pod) => {
                if let (Some(listing), Some(name)) = (&mut self.listing, &pod.metadata.name) {
                    listing.insert(name.clone());
                }
                self.apply(&pod);
            }
            watcher::Event::InitDone => {
                // Pods followed that a new listing no longer names went meanwhile.
                let listed = self.listing.take().unwrap_or_default();
                let gone: Vec<String> = (self.by_pod.keys())
                    .filter(|pod| !listed.contains(*pod))
                    .cloned()
                    .collect();
                gone.iter().for_each(|pod| self.gone(pod));
                self.listed_once = true;
            }
            watcher::Event::Apply(pod) => self.apply(&pod),
            watcher::Event::Delete(pod) => {
                if let Some(name) = &pod.metadata.name {
                    self.gone(name);
                }
            }
        }
    }

    /// Follows the containers of `pod` that have started (or are starting) and are not
    /// followed yet, and again those whose reading ended and that run a new time.
    fn apply(&mut self, pod: &Pod) {
        let (Some(name), Some(uid)) = (pod.metadata.name.clone(), pod.metadata.uid.clone()) else {
            return;
        };
        if self.by_pod.get(&name).is_some_and(|p| p.uid != uid) {
            self.gone(&name);
        }
        let restarts: BTreeMap<String, i32> = (containers(pod).into_iter())
            .map(|c| (c.name, c.restarts))
            .collect();
        let (again, known) = {
            let followed = self.by_pod.entry(name.clone()).or_default();
            followed.uid = uid;
            // A new run (more restarts than when its reading began), or a reading
            // that gave up waiting: the old run's log would come twice.
            let again: Vec<String> = (followed.readers.iter())
                .filter(|r| r.reading.is_finished() && startable(pod, &r.container))
                .filter(|r| {
                    !r.read.load(Ordering::Relaxed)
                        || restarts.get(&r.container).is_some_and(|n| *n > r.restarts)
                })
                .map(|r| r.container.clone())
                .collect();
            followed.readers.retain(|r| !again.contains(&r.container));
            (again, followed.readers.len())
        };
        let followed = self.by_pod.get(&name).map_or(&[][..], |p| &p.readers);
        // A container waiting for anything but its start (an image that cannot be
        // pulled, an unscheduled Pod) is followed once it starts: no asking meanwhile.
        let new: Vec<String> = (restarts.keys())
            .filter(|c| !followed.iter().any(|r| &r.container == *c))
            .filter(|c| startable(pod, c))
            .cloned()
            .collect();
        if new.is_empty() {
            return;
        }
        // Readings going on, in every Pod: the bound is on what is followed now.
        let count: usize = (self.by_pod.values().flat_map(|p| &p.readers))
            .filter(|r| !r.reading.is_finished())
            .count();
        // A Pod there when the view opened starts from the tail; a new one (or a
        // container's new run) from its start.
        let tail = if self.listed_once { None } else { self.tail };
        let rest = |i: usize| new.get(i..).unwrap_or_default().join(", ");
        let mut started = Vec::new();
        let mut refusal = None;
        for (i, container) in new.iter().enumerate() {
            if count + started.len() >= MOST_CONTAINERS {
                refusal = Some(format!(
                    "not following {}: a view follows {MOST_CONTAINERS} containers at most",
                    rest(i)
                ));
                break;
            }
            let reserved = match self.state.hub.reserve(&self.person, PER_CONTAINER) {
                Ok(reserved) => reserved,
                Err(refused) => {
                    refusal = Some(format!("not following {}: {refused}", rest(i)));
                    break;
                }
            };
            let from = if again.contains(container) {
                None
            } else {
                tail
            };
            let read = Arc::new(AtomicBool::new(false));
            let task = tokio::spawn(follow_container(
                self.pods.clone(),
                (self.namespace.clone(), name.clone(), container.clone()),
                from,
                (self.queue.clone(), read.clone()),
                reserved,
            ));
            started.push(Reader {
                container: container.clone(),
                restarts: restarts.get(container).copied().unwrap_or_default(),
                read,
                reading: AbortOnDrop(task),
            });
        }
        // Said once per Pod, not on each of its status changes.
        if let Some(refusal) = refusal
            && self.refused.insert(name.clone())
        {
            self.note(&name, &refusal);
        }
        if started.is_empty() {
            return;
        }
        let names: Vec<&str> = started.iter().map(|r| r.container.as_str()).collect();
        let what = match (known, again.is_empty()) {
            (_, false) => format!("following {} again (started again)", names.join(", ")),
            (0, true) => format!("following {}", names.join(", ")),
            (_, true) => format!("also following {}", names.join(", ")),
        };
        self.note(&name, &what);
        self.by_pod.entry(name).or_default().readers.extend(started);
    }

    /// Stops following `pod`'s containers, with a note.
    fn gone(&mut self, pod: &str) {
        self.refused.remove(pod);
        if self.by_pod.remove(pod).is_some() {
            self.note(pod, "is gone; its lines end here");
        }
    }

    fn note(&self, pod: &str, text: &str) {
        self.queue.push([now_note(pod, text)]);
    }
}

/// Whether `pod`'s container `name` has a log to read, or is about to: it runs, it
/// ran and stopped, or it is being created; as the Pod's status says.
fn startable(pod: &Pod, name: &str) -> bool {
    let status = pod.status.as_ref();
    (status.into_iter())
        .flat_map(|s| [&s.init_container_statuses, &s.container_statuses])
        .flatten()
        .flatten()
        .filter(|c| c.name == name)
        .filter_map(|c| c.state.as_ref())
        .any(|state| {
            let creating = (state.waiting.as_ref())
                .and_then(|w| w.reason.as_deref())
                .is_some_and(|r| matches!(r, "ContainerCreating" | "PodInitializing"));
            state.running.is_some() || state.terminated.is_some() || creating
        })
}

/// A note about `pod`, stamped now.
fn now_note(pod: &str, text: &str) -> String {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    tagged_line::note(&now, pod, text)
}

/// Follows one container of one Pod into `queue`, tagged, from when it starts until it
/// stops; its lines held in the person's budget by `reserved` meanwhile.
async fn follow_container(
    pods: Api<Pod>,
    (namespace, pod, container): (String, String, String),
    tail: Option<u32>,
    (queue, read): (Arc<Queue>, Arc<AtomicBool>),
    reserved: Reservation,
) {
    let _reserved = reserved;
    let params = LogParams {
        container: Some(container.clone()),
        follow: true,
        tail_lines: tail.map(i64::from),
        timestamps: true,
        ..LogParams::default()
    };
    // Being created: its log comes in moments. Given up after a while (a volume that
    // cannot be mounted); the Pod's next change asks again.
    let mut tries = 0;
    let reader = loop {
        match pods.log_stream(&pod, &params).await {
            Ok(reader) => break reader,
            Err(error) => match LogError::of_request(error, &namespace, &container) {
                LogError::NotStarted { .. } if tries < MOST_TRIES => {
                    tries += 1;
                    tokio::time::sleep(WAITING_RETRY).await;
                }
                other => {
                    queue.push([now_note(&pod, &format!("{container}: {other}"))]);
                    return;
                }
            },
        }
    };
    read.store(true, Ordering::Relaxed);
    let following = Following {
        pods,
        namespace,
        pod: pod.clone(),
        container: container.clone(),
        params,
        tag: true,
    };
    let said = match following.run(reader, &queue).await {
        Ok(()) => format!("container {container} stopped; its log ends here"),
        Err(broke) => format!("container {container}: {broke}"),
    };
    queue.push([now_note(&pod, &said)]);
}
