//! Why a Stack's Pod cannot be placed, in the scheduler's own words (its PodScheduled
//! condition, the same text as its FailedScheduling Event), and when a Pod's change
//! means the Stack's status should be looked at again. Pure.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::stack::Stack;

/// The reason a Stack's Degraded condition carries while a Pod cannot be placed.
pub const REASON: &str = "Unschedulable";

/// "Pod NAME cannot be placed: <the scheduler's message>", when the scheduler has
/// tried and found no node for it.
pub fn unschedulable(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let condition = pod
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")?;
    let why = condition
        .message
        .clone()
        .or_else(|| condition.reason.clone())
        .unwrap_or_else(|| "no node fits it".into());
    Some(format!("Pod {} cannot be placed: {why}", pod.name_any()))
}

/// The first of `pods` that cannot be placed, by name (so the message is stable).
pub fn first_unschedulable<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Option<String> {
    let mut stuck: Vec<(String, String)> = pods
        .into_iter()
        .filter_map(|p| Some((p.name_any(), unschedulable(p)?)))
        .collect();
    stuck.sort();
    stuck.into_iter().next().map(|(_, message)| message)
}

/// Whether a change to one of `stack`'s Pods should reconcile it: the Pod cannot be
/// placed and the status does not say so yet (or says it differently), or the status
/// says a Pod cannot be placed and this one now has been. Any other Pod change shows
/// in the workload's own status, which the reconciler already watches.
pub fn pod_changes_status(pod: &Pod, stack: Option<&Stack>) -> bool {
    let recorded = stack
        .and_then(|s| s.status.as_ref())
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Degraded"))
        .filter(|c| c.status == "True" && c.reason == REASON)
        .map(|c| c.message.as_str());
    match (unschedulable(pod), recorded) {
        (Some(now), Some(said)) => now != said,
        (Some(_), None) => true,
        (None, Some(said)) => said.starts_with(&format!("Pod {} ", pod.name_any())),
        (None, None) => false,
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
        let pods = [
            pod("b", Some(("False", "x"))),
            pod("a", Some(("False", "y"))),
        ];
        assert_eq!(
            first_unschedulable(&pods).as_deref(),
            Some("Pod a cannot be placed: y")
        );
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
