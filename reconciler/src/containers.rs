//! Why a Stack's placed Pods do not serve, in plain words a person can act on: an
//! image that cannot be pulled, a container that cannot be created or keeps exiting
//! (its exit code and the end of its log, which kubelet keeps in the container's
//! termination message: the children ask for `FallbackToLogsOnError`), or a readiness
//! probe that never passes. Pure: reads Pod status only (the reconciler's Pod cache
//! drops specs).

use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

/// Degraded reasons for what containers report.
pub const IMAGE_REASON: &str = "ImageUnavailable";
pub const START_REASON: &str = "ContainerCannotStart";
pub const EXIT_REASON: &str = "ContainerExiting";
pub const PROBE_REASON: &str = "NeverReady";

/// How long a running container may take to pass its readiness probe before its
/// Stack says it does not: MariaDB initialising an empty volume takes about 15 s on a
/// 2-core machine, and probes run every 10 s.
pub const READY_GRACE: Duration = Duration::from_secs(90);

/// kubelet's waiting reasons for an image it cannot get.
const IMAGE_WAITING: [&str; 5] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
];
/// kubelet's waiting reasons for a container it cannot create or start.
const START_WAITING: [&str; 3] = [
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];
/// At most this much of a container's log goes into a status message.
const LOG_LINES: usize = 5;
const LOG_CHARS: usize = 400;
/// kubelet's messages quote whole registry answers: keep the sentence readable.
const DETAIL_CHARS: usize = 300;

/// What a Stack's Pods say about their containers.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    /// Nothing wrong that the Pods show (or nothing to say yet).
    Fine,
    /// The first Pod's trouble (by name, so the message is stable): reason, message.
    Troubled(&'static str, String),
    /// A container runs but is not ready, not for [`READY_GRACE`] yet: look again.
    Waiting(Duration),
}

/// The trouble `pod` shows at once, from its status alone (no time involved): an
/// image, a container that cannot start, or one that keeps exiting. As (reason,
/// message); the message starts with "Pod NAME", like the scheduler's.
pub fn immediate(pod: &Pod) -> Option<(&'static str, String)> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let name = pod.name_any();
    statuses(pod).find_map(|c| container_trouble(&name, c))
}

/// Where `pods` stand at `now`; `probe` describes the readiness probe, for the
/// message ("exec: mysqladmin ping …").
pub fn health<'a>(pods: impl IntoIterator<Item = &'a Pod>, now: Timestamp, probe: &str) -> Health {
    let mut pods: Vec<&Pod> = pods
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    pods.sort_by_key(|p| p.name_any());
    let mut soonest: Option<Duration> = None;
    for pod in &pods {
        if let Some((reason, message)) = immediate(pod) {
            return Health::Troubled(reason, message);
        }
    }
    for pod in &pods {
        for c in statuses(pod) {
            let Some(started) = container_unready_since(c) else {
                continue;
            };
            let running_for = Duration::try_from(now.duration_since(started)).unwrap_or_default();
            match READY_GRACE
                .checked_sub(running_for)
                .filter(|l| !l.is_zero())
            {
                Some(left) => soonest = Some(soonest.map_or(left, |s| s.min(left))),
                None => {
                    let message = format!(
                        "Pod {} is not ready: container {} has run for {} s and its readiness probe ({probe}) has not passed.",
                        pod.name_any(),
                        c.name,
                        running_for.as_secs()
                    );
                    return Health::Troubled(PROBE_REASON, message);
                }
            }
        }
    }
    soonest.map_or(Health::Fine, Health::Waiting)
}

fn statuses(pod: &Pod) -> impl Iterator<Item = &ContainerStatus> {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .into_iter()
        .flatten()
}

fn container_trouble(pod: &str, c: &ContainerStatus) -> Option<(&'static str, String)> {
    let state = c.state.as_ref();
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let reason = waiting.reason.as_deref().unwrap_or_default();
        let detail = waiting.message.as_deref().map(shorten).unwrap_or_default();
        if IMAGE_WAITING.contains(&reason) {
            return Some((
                IMAGE_REASON,
                format!(
                    "Pod {pod} cannot start: the image {} cannot be pulled ({reason}: {detail}).",
                    c.image
                ),
            ));
        }
        if START_WAITING.contains(&reason) {
            return Some((
                START_REASON,
                format!(
                    "Pod {pod} cannot start container {}: {reason}: {detail}.",
                    c.name
                ),
            ));
        }
    }
    if c.ready {
        return None;
    }
    // Exited now, or exited before and waiting to be restarted (CrashLoopBackOff).
    let exited = state
        .and_then(|s| s.terminated.as_ref())
        .or_else(|| c.last_state.as_ref()?.terminated.as_ref())
        .filter(|t| t.exit_code != 0)?;
    let waiting_to_restart = state.and_then(|s| s.waiting.as_ref()).is_some();
    if !waiting_to_restart && state.and_then(|s| s.terminated.as_ref()).is_none() {
        // Running again after an earlier exit: the probe (or readiness) decides.
        return None;
    }
    let why = match exited.reason.as_deref() {
        Some("OOMKilled") => " (killed for using more memory than its limit)".to_string(),
        Some("Error") | None => String::new(),
        Some(other) => format!(" ({other})"),
    };
    let log = exited
        .message
        .as_deref()
        .map(log_tail)
        .filter(|t| !t.is_empty())
        .map(|t| format!("; its log ends: {t}"))
        .unwrap_or_else(|| "; it wrote no log".into());
    Some((
        EXIT_REASON,
        format!(
            "Pod {pod} keeps failing: container {} exited with code {}{why} ({} restarts){log}",
            c.name, exited.exit_code, c.restart_count
        ),
    ))
}

/// When each of `pod`'s containers that run but are not ready started: what the
/// Pod cache's change filter looks at (with [`immediate`]), so that a container
/// starting wakes the reconcile that times its probe.
pub fn unready_since(pod: &Pod) -> Vec<Timestamp> {
    statuses(pod).filter_map(container_unready_since).collect()
}

/// When a container that runs but is not ready started (none for a ready one).
fn container_unready_since(c: &ContainerStatus) -> Option<Timestamp> {
    if c.ready {
        return None;
    }
    c.state
        .as_ref()?
        .running
        .as_ref()?
        .started_at
        .as_ref()
        .map(|t| t.0)
}

/// The last lines of a log, on one line, without escape sequences or control
/// characters, at most [`LOG_CHARS`] characters from the end.
fn log_tail(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let from = lines.len().saturating_sub(LOG_LINES);
    let joined = lines.get(from..).unwrap_or_default().join(" | ");
    // On one line: the tabs `clean` keeps go too.
    let clean: String = portico_core::terminal::clean(&joined)
        .chars()
        .filter(|ch| *ch != '\t')
        .collect();
    let count = clean.chars().count();
    match count.checked_sub(LOG_CHARS) {
        Some(skip) if skip > 0 => format!("…{}", clean.chars().skip(skip).collect::<String>()),
        _ => clean,
    }
}

fn shorten(text: &str) -> String {
    let text = text.trim().trim_end_matches('.');
    match text.char_indices().nth(DETAIL_CHARS) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or(text)),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, containers: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"containerStatuses": containers},
        }))
        .expect("pod")
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(seconds).expect("a time")
    }

    #[test]
    fn an_image_that_cannot_be_pulled_is_said_with_kubelets_words() {
        let p = pod(
            "db-0",
            json!([{"name": "mysql", "image": "portico.local/mariadb:99", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ErrImagePull", "message": "failed to pull and unpack image \"portico.local/mariadb:99\": failed to resolve reference: dial tcp: lookup portico.local: no such host"}}}]),
        );
        let (reason, message) = immediate(&p).expect("trouble");
        assert_eq!(reason, IMAGE_REASON);
        assert!(
            message.starts_with("Pod db-0 cannot start: the image portico.local/mariadb:99 cannot be pulled (ErrImagePull: failed to pull"),
            "{message}"
        );
    }

    #[test]
    fn a_crashing_container_gives_its_exit_code_and_the_end_of_its_log() {
        let p = pod(
            "web-1",
            json!([{"name": "tomcat", "image": "i", "imageID": "", "ready": false, "restartCount": 3,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}},
                "lastState": {"terminated": {"exitCode": 2, "reason": "Error",
                    "message": "starting\n\u{1b}[31mline 2\u{1b}[0m\nline 3\nline 4\nline 5\nfatal: no config\n"}}}]),
        );
        let (reason, message) = immediate(&p).expect("trouble");
        assert_eq!(reason, EXIT_REASON);
        assert_eq!(
            message,
            "Pod web-1 keeps failing: container tomcat exited with code 2 (3 restarts); its log ends: line 2 | line 3 | line 4 | line 5 | fatal: no config"
        );
    }

    #[test]
    fn a_container_running_again_after_a_crash_is_left_to_its_probe() {
        let p = pod(
            "db-0",
            json!([{"name": "mysql", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
                "state": {"running": {"startedAt": "1970-01-01T00:00:10Z"}},
                "lastState": {"terminated": {"exitCode": 1}}}]),
        );
        assert_eq!(immediate(&p), None);
        assert_eq!(
            health([&p], at(40), "exec: true"),
            Health::Waiting(READY_GRACE - Duration::from_secs(30))
        );
    }

    #[test]
    fn a_probe_that_never_passes_is_said_after_the_grace() {
        let p = pod(
            "db-0",
            json!([{"name": "mysql", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"running": {"startedAt": "1970-01-01T00:00:00Z"}}}]),
        );
        let Health::Troubled(reason, message) = health([&p], at(95), "exec: mysqladmin ping")
        else {
            panic!("troubled")
        };
        assert_eq!(reason, PROBE_REASON);
        assert_eq!(
            message,
            "Pod db-0 is not ready: container mysql has run for 95 s and its readiness probe (exec: mysqladmin ping) has not passed."
        );
    }

    #[test]
    fn ready_containers_and_deleted_pods_are_fine() {
        let ready = pod(
            "a",
            json!([{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 2,
                "state": {"running": {}}, "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]),
        );
        assert_eq!(health([&ready], at(1000), "p"), Health::Fine);
        let mut going: Pod = pod(
            "b",
            json!([{"name": "c", "image": "x", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {"reason": "ImagePullBackOff"}}}]),
        );
        going.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(at(1)));
        assert_eq!(health([&going], at(1000), "p"), Health::Fine);
    }

    #[test]
    fn an_oom_kill_says_so_and_long_logs_are_cut_from_the_start() {
        let long = "x".repeat(1000);
        let p = pod(
            "a",
            json!([{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 1,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": long}}}]),
        );
        let (_, message) = immediate(&p).expect("trouble");
        assert!(
            message.contains("code 137 (killed for using more memory than its limit)"),
            "{message}"
        );
        assert!(
            message.ends_with(&format!("…{}", "x".repeat(LOG_CHARS))),
            "{message}"
        );
    }
}
