//! Why a Stack's Pod cannot be placed, in the scheduler's own words (its PodScheduled
//! condition, the same text as its FailedScheduling Event), and when a Pod's change
//! means the Stack's status should be looked at again. Pure.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::containers;
use super::stack::Stack;

/// The reason a Stack's Degraded condition carries while a Pod cannot be placed.
pub const REASON: &str = "Unschedulable";

/// "Pod NAME cannot be placed: <the scheduler's message>", when the scheduler has
/// tried and found no node for it (reason Unschedulable). Not for its own errors
/// (reason SchedulerError, e.g. a conflict writing the claim while binding volumes):
/// it retries those, and they say nothing about the Stack.
pub fn unschedulable(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let condition = unplaced(pod)?;
    let why = condition
        .message
        .clone()
        .or_else(|| condition.reason.clone())
        .unwrap_or_else(|| "no node fits it".into());
    Some(format!("Pod {} cannot be placed: {why}", pod.name_any()))
}

/// How long the scheduler must have been unable to place a Pod before the Stack says
/// so: a StatefulSet's Pod can reach the scheduler before its new claim does
/// ("persistentvolumeclaim … not found") and be placed a moment later. (In the
/// 1,000-Stack benchmark 399 of 500 MySQL Stacks showed Degraded for a moment, most for
/// the scheduler's own retried errors, which no longer count at all.)
pub const GRACE: Duration = Duration::from_secs(5);

/// What the Stack's Pods say about being placed, at `now`.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// Every Pod placed, or none unplaced for [`GRACE`] yet and none at all waiting.
    Placed,
    /// The first Pod (by name, so the message is stable) unplaced for [`GRACE`].
    Stuck(String),
    /// A Pod is unplaced but not for [`GRACE`] yet: look again after this long.
    Waiting(Duration),
}

/// Where `pods` stand at `now` ([`Placement`]).
pub fn placement<'a>(pods: impl IntoIterator<Item = &'a Pod>, now: Timestamp) -> Placement {
    let mut stuck: Vec<(String, String)> = Vec::new();
    let mut soonest: Option<Duration> = None;
    for pod in pods {
        let Some(message) = unschedulable(pod) else {
            continue;
        };
        // Without a transition time (never so from a scheduler), it counts as long ago.
        let unplaced_for = unplaced_since(pod)
            .and_then(|since| Duration::try_from(now.duration_since(since)).ok())
            .unwrap_or(GRACE);
        match GRACE
            .checked_sub(unplaced_for)
            .filter(|left| !left.is_zero())
        {
            Some(left) => soonest = Some(soonest.map_or(left, |s| s.min(left))),
            None => stuck.push((pod.name_any(), message)),
        }
    }
    stuck.sort();
    match (stuck.into_iter().next(), soonest) {
        (Some((_, message)), _) => Placement::Stuck(message),
        (None, Some(left)) => Placement::Waiting(left),
        (None, None) => Placement::Placed,
    }
}

/// `pod`'s PodScheduled condition when it says no node fits.
fn unplaced(pod: &Pod) -> Option<&PodCondition> {
    pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| {
        c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some(REASON)
    })
}

/// When the scheduler first said it could not place `pod` (the condition's transition
/// time).
fn unplaced_since(pod: &Pod) -> Option<Timestamp> {
    unplaced(pod)?.last_transition_time.as_ref().map(|t| t.0)
}

/// What `pod` says its Stack's Degraded condition should say, from its own state: that
/// it cannot be placed, or what its containers show at once (an image, a container
/// that cannot start or keeps exiting: [`containers::immediate`]).
pub fn pod_problem(pod: &Pod) -> Option<String> {
    unschedulable(pod).or_else(|| containers::immediate(pod).map(|(_, message)| message))
}

/// Degraded reasons that come from one Pod's own state.
const POD_REASONS: [&str; 4] = [
    REASON,
    containers::IMAGE_REASON,
    containers::START_REASON,
    containers::EXIT_REASON,
];

/// Whether a change to one of `stack`'s Pods should reconcile it: the Pod has a
/// problem ([`pod_problem`]) the status does not say yet (or says differently), the
/// status names this Pod's problem and it is gone, or a container started and is not
/// ready yet (the reconcile then looks again when [`containers::READY_GRACE`] ends).
/// Any other Pod change shows in the workload's own status, which the reconciler
/// already watches.
pub fn pod_changes_status(pod: &Pod, stack: Option<&Stack>) -> bool {
    let recorded = stack
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Degraded"))
        .filter(|c| c.status == "True" && POD_REASONS.contains(&c.reason.as_str()))
        .map(|c| c.message.as_str());
    match (pod_problem(pod), recorded) {
        (Some(now), Some(said)) => now != said,
        (Some(_), None) => true,
        (None, Some(said)) => said.starts_with(&format!("Pod {} ", pod.name_any())),
        (None, None) => !containers::unready_since(pod).is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, scheduled: Option<(&str, &str)>) -> Pod {
        let conditions = scheduled
            .map(|(status, message)| {
                json!([{"type": "PodScheduled", "status": status, "reason": "Unschedulable", "message": message}])
            })
            .unwrap_or(json!([]));
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {"phase": "Pending", "conditions": conditions},
        }))
        .expect("pod")
    }

    fn stack_saying(message: Option<&str>) -> Stack {
        let conditions = message
            .map(|m| {
                json!([{"type": "Degraded", "status": "True", "reason": REASON, "message": m,
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}])
            })
            .unwrap_or(json!([]));
        serde_json::from_value(json!({
            "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
            "metadata": {"name": "db"},
            "spec": {"choice": "mysql"},
            "status": {"conditions": conditions},
        }))
        .expect("stack")
    }

    const FULL: &str = "0/3 nodes are available: 3 Insufficient cpu.";

    #[test]
    fn the_schedulers_words_name_the_pod() {
        assert_eq!(
            unschedulable(&pod("db-0", Some(("False", FULL)))).as_deref(),
            Some("Pod db-0 cannot be placed: 0/3 nodes are available: 3 Insufficient cpu.")
        );
        assert_eq!(unschedulable(&pod("db-0", Some(("True", "")))), None);
        assert_eq!(unschedulable(&pod("db-0", None)), None);
        let mut retried = pod(
            "db-0",
            Some((
                "False",
                "running PreBind plugin \"VolumeBinding\": conflict",
            )),
        );
        if let Some(c) = retried
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.reason = Some("SchedulerError".into());
        }
        assert_eq!(
            unschedulable(&retried),
            None,
            "the scheduler's own error, retried"
        );
        let pods = [
            pod("b", Some(("False", "x"))),
            pod("a", Some(("False", "y"))),
        ];
        assert_eq!(
            placement(&pods, Timestamp::now()),
            Placement::Stuck("Pod a cannot be placed: y".into())
        );
    }

    #[test]
    fn a_pod_is_stuck_only_once_it_has_been_unplaced_for_the_grace_period() {
        let since = Timestamp::from_second(1_800_000_000).expect("a time");
        let mut fresh = pod("db-0", Some(("False", FULL)));
        if let Some(c) = fresh
            .status
            .as_mut()
            .and_then(|s| s.conditions.as_mut())
            .and_then(|c| c.first_mut())
        {
            c.last_transition_time =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(since));
        }
        let at = |seconds: i64| {
            since
                .checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds))
                .expect("a time")
        };
        assert_eq!(
            placement([&fresh], at(1)),
            Placement::Waiting(Duration::from_secs(4))
        );
        assert!(matches!(placement([&fresh], at(5)), Placement::Stuck(_)));
        assert_eq!(placement([&pod("db-0", None)], at(5)), Placement::Placed);
    }

    #[test]
    fn only_changes_to_placement_wake_the_stack() {
        let stuck = pod("db-0", Some(("False", FULL)));
        let placed = pod("db-0", Some(("True", "")));
        let said = unschedulable(&stuck).expect("message");
        assert!(pod_changes_status(&stuck, Some(&stack_saying(None))));
        assert!(!pod_changes_status(
            &stuck,
            Some(&stack_saying(Some(&said)))
        ));
        assert!(pod_changes_status(
            &pod("db-0", Some(("False", "0/4 nodes are available"))),
            Some(&stack_saying(Some(&said)))
        ));
        assert!(pod_changes_status(
            &placed,
            Some(&stack_saying(Some(&said)))
        ));
        assert!(!pod_changes_status(&placed, Some(&stack_saying(None))));
        // Another Pod's placement says nothing about the one the status names.
        assert!(!pod_changes_status(
            &pod("web-1", Some(("True", ""))),
            Some(&stack_saying(Some(&said)))
        ));
    }
}
