//! Why a stateful Stack's Pod waits on its volume: a claim that does not bind (no
//! such StorageClass, a provisioner that is not running or refuses, no default class),
//! said in the words of the claim's newest Event, which is where the volume controller
//! and provisioners say it. The scheduler only says "unbound immediate
//! PersistentVolumeClaims", or still quotes its first try ("persistentvolumeclaim …
//! not found") while it waits for a volume.
//!
//! Asked of the API server only while a Pod of the Stack cannot be placed: one claim
//! read and one Event list per stuck replica, never for Stacks that run.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim};
use kube::api::{Api, ListParams};

use super::children;

/// The reason a Stack's Degraded condition carries while a claim does not bind.
pub const REASON: &str = "VolumeUnbound";

/// Set on a claim when the scheduler has chosen its Pod's node (WaitForFirstConsumer
/// classes): from then on, binding is up to the volume's provisioner.
const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";

/// The volume controller's reasons for a claim that only waits for its Pod.
const WAITING_FOR_THE_POD: [&str; 2] = ["WaitForFirstConsumer", "WaitForPodScheduled"];

/// How soon to look again while a claim is unbound: its Event may come a few seconds
/// after the Pod is found stuck (the volume controller retries with backoff), and a
/// provisioner's error can change.
pub const LOOK_AGAIN: Duration = Duration::from_secs(20);

/// What one unbound claim of replica `ordinal` of Stack `stack` says, or `None` when
/// it is bound, not made yet, or says nothing yet.
pub fn describe(
    stack: &str,
    ordinal: i32,
    claim: &PersistentVolumeClaim,
    events: &[Event],
) -> Option<String> {
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase != Some("Pending") {
        return None;
    }
    let newest = events
        .iter()
        .filter(|e| e.message.as_deref().is_some_and(|m| !m.trim().is_empty()))
        .max_by_key(|e| when(e))?;
    // A claim that waits for its Pod to be placed (WaitForFirstConsumer, no node
    // chosen yet) is not why the Pod cannot be placed: the scheduler's words stand.
    let node_chosen = claim
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(SELECTED_NODE));
    if !node_chosen && WAITING_FOR_THE_POD.contains(&newest.reason.as_deref().unwrap_or_default()) {
        return None;
    }
    let newest = newest.message.as_deref().unwrap_or_default().trim();
    let class = claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .map(|class| format!(" (storage class {class})"))
        .unwrap_or_default();
    Some(format!(
        "Pod {stack}-{ordinal} cannot start: its volume claim {} is not bound{class}: {newest}",
        children::claim_name(stack, ordinal)
    ))
}

/// When an Event last happened, whichever field its reporter filled.
fn when(event: &Event) -> Option<k8s_openapi::jiff::Timestamp> {
    event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// Whether a claim of Stack `stack` (replicas `0..replicas`) is unbound, and what
/// the first such says ([`describe`]); `Ok(Some(None))` when one is unbound but no
/// Event explains it yet.
pub async fn unbound(
    client: &kube::Client,
    namespace: &str,
    stack: &str,
    replicas: i32,
) -> Result<Option<Option<String>>, kube::Error> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut pending = false;
    for ordinal in 0..replicas.max(0) {
        let name = children::claim_name(stack, ordinal);
        let Some(claim) = claims.get_opt(&name).await? else {
            continue;
        };
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Pending") {
            continue;
        }
        pending = true;
        let about = ListParams::default().fields(&format!(
            "involvedObject.kind=PersistentVolumeClaim,involvedObject.name={name}"
        ));
        let told = events.list(&about).await?;
        if let Some(message) = describe(stack, ordinal, &claim, &told.items) {
            return Ok(Some(Some(message)));
        }
    }
    Ok(pending.then_some(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(phase: &str, class: Option<&str>) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "data-db-0"},
            "spec": {"storageClassName": class},
            "status": {"phase": phase},
        }))
        .expect("claim")
    }

    fn event(at: &str, message: &str) -> Event {
        reason_event(at, "ProvisioningFailed", message)
    }

    fn reason_event(at: &str, reason: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("e{at}")},
            "involvedObject": {"kind": "PersistentVolumeClaim", "name": "data-db-0"},
            "lastTimestamp": at,
            "reason": reason,
            "message": message,
        }))
        .expect("event")
    }

    #[test]
    fn a_claim_waiting_for_its_pod_to_be_placed_is_not_the_reason() {
        let waiting = [reason_event(
            "2026-01-01T00:00:02Z",
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        )];
        // The Pod cannot be placed for another reason (CPU): the claim waits on it.
        assert_eq!(
            describe("db", 0, &claim("Pending", Some("standard")), &waiting),
            None
        );
        // Once the scheduler chose a node, a claim still pending is the provisioner's.
        let mut chosen = claim("Pending", Some("standard"));
        chosen.metadata.annotations =
            Some([(SELECTED_NODE.to_string(), "node-1".to_string())].into());
        let provisioning = [reason_event(
            "2026-01-01T00:00:03Z",
            "ExternalProvisioning",
            "Waiting for a volume to be created either by the external provisioner 'x'",
        )];
        assert!(
            describe("db", 0, &chosen, &provisioning)
                .is_some_and(|m| m.ends_with("by the external provisioner 'x'"))
        );
    }

    #[test]
    fn an_unbound_claim_is_said_in_its_newest_events_words() {
        let events = [
            event(
                "2026-01-01T00:00:02Z",
                "storageclass.storage.k8s.io \"fast\" not found",
            ),
            event(
                "2026-01-01T00:00:01Z",
                "waiting for pod db-0 to be scheduled",
            ),
        ];
        assert_eq!(
            describe("db", 0, &claim("Pending", Some("fast")), &events).as_deref(),
            Some(
                "Pod db-0 cannot start: its volume claim data-db-0 is not bound (storage class \
                 fast): storageclass.storage.k8s.io \"fast\" not found"
            )
        );
    }

    #[test]
    fn a_bound_claim_or_one_nothing_explains_yet_says_nothing() {
        let events = [event("2026-01-01T00:00:02Z", "anything")];
        assert_eq!(describe("db", 0, &claim("Bound", None), &events), None);
        assert_eq!(describe("db", 0, &claim("Pending", None), &[]), None);
        assert_eq!(
            describe(
                "db",
                0,
                &claim("Pending", None),
                &[event("2026-01-01T00:00:02Z", "  ")]
            ),
            None
        );
    }
}
