//! Why a stateful Stack's Pod waits on its volume: a claim that does not bind (no
//! such StorageClass, a provisioner that is not running or refuses, no default class),
//! said in the words of the claim's Events, which is where the volume controller and
//! provisioners say it. The scheduler only says "unbound immediate
//! PersistentVolumeClaims", or still quotes its first try ("persistentvolumeclaim …
//! not found") while it waits for a volume.
//!
//! Asked of the API server only while a Pod of the Stack cannot be placed: a read of
//! each replica's claim and an Event list for each pending one, never for Stacks that
//! run. A failed look leaves the scheduler's words as they are.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim};
use kube::api::{Api, ListParams};

use super::desired;

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

/// What a Stack's claims say about its Pod not being placed.
#[derive(Debug, Clone, PartialEq)]
pub enum Claims {
    /// Bound, not made yet, or only waiting for the Pod to be placed: not the reason.
    NotTheReason,
    /// One is unbound and nothing says why yet: look again soon.
    Unexplained,
    /// One is unbound, and this is why (the Stack's Degraded message).
    Unbound(String),
}

/// What one claim of replica `ordinal` of Stack `stack` says, given its Events.
pub fn describe(
    stack: &str,
    ordinal: i32,
    claim: &PersistentVolumeClaim,
    events: &[Event],
) -> Claims {
    let phase = claim.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase != Some("Pending") {
        return Claims::NotTheReason;
    }
    let told: Vec<&Event> = events
        .iter()
        .filter(|e| e.message.as_deref().is_some_and(|m| !m.trim().is_empty()))
        .collect();
    // A provisioner's failure (a Warning) repeats with backoff, its "waiting" notes
    // (Normal) more often: the newest Warning says why, else the newest word at all.
    let warning = told
        .iter()
        .filter(|e| e.type_.as_deref() == Some("Warning"))
        .max_by_key(|e| when(e));
    let Some(newest) = warning.or_else(|| told.iter().max_by_key(|e| when(e))) else {
        return Claims::Unexplained;
    };
    // A claim that waits for its Pod to be placed (WaitForFirstConsumer, no node
    // chosen yet) is not why the Pod cannot be placed: the scheduler's words stand.
    let node_chosen = claim
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(SELECTED_NODE));
    if !node_chosen && WAITING_FOR_THE_POD.contains(&newest.reason.as_deref().unwrap_or_default()) {
        return Claims::NotTheReason;
    }
    let words = newest.message.as_deref().unwrap_or_default().trim();
    let class = claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .map(|class| format!(" (storage class {class})"))
        .unwrap_or_default();
    Claims::Unbound(format!(
        "Pod {stack}-{ordinal} cannot start: its volume claim {} is not bound{class}: {words}",
        desired::claim_name(stack, ordinal)
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

/// What the claims of Stack `stack` (replicas `0..replicas`) say: the first unbound
/// one's reason ([`describe`]). Only this claim's Events count (by uid): a claim made
/// again under the same name does not inherit the old one's.
pub async fn unbound(
    client: &kube::Client,
    namespace: &str,
    stack: &str,
    replicas: i32,
) -> Result<Claims, kube::Error> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), namespace);
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let mut verdict = Claims::NotTheReason;
    for ordinal in 0..replicas.max(0) {
        let name = desired::claim_name(stack, ordinal);
        let Some(claim) = claims.get_opt(&name).await? else {
            continue;
        };
        if claim.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Pending") {
            continue;
        }
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let about = ListParams::default().fields(&format!(
            "involvedObject.kind=PersistentVolumeClaim,involvedObject.name={name},involvedObject.uid={uid}"
        ));
        match describe(stack, ordinal, &claim, &events.list(&about).await?.items) {
            unbound @ Claims::Unbound(_) => return Ok(unbound),
            Claims::Unexplained => verdict = Claims::Unexplained,
            Claims::NotTheReason => {}
        }
    }
    Ok(verdict)
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

    fn event(at: &str, type_: &str, reason: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": format!("e{at}")},
            "involvedObject": {"kind": "PersistentVolumeClaim", "name": "data-db-0"},
            "lastTimestamp": at,
            "type": type_,
            "reason": reason,
            "message": message,
        }))
        .expect("event")
    }

    #[test]
    fn a_claim_waiting_for_its_pod_to_be_placed_is_not_the_reason() {
        let waiting = [event(
            "2026-01-01T00:00:02Z",
            "Normal",
            "WaitForFirstConsumer",
            "waiting for first consumer to be created before binding",
        )];
        // The Pod cannot be placed for another reason (CPU): the claim waits on it.
        assert_eq!(
            describe("db", 0, &claim("Pending", Some("standard")), &waiting),
            Claims::NotTheReason
        );
        // Once the scheduler chose a node, a claim still pending is the provisioner's.
        let mut chosen = claim("Pending", Some("standard"));
        chosen.metadata.annotations =
            Some([(SELECTED_NODE.to_string(), "node-1".to_string())].into());
        let provisioning = [event(
            "2026-01-01T00:00:03Z",
            "Normal",
            "ExternalProvisioning",
            "Waiting for a volume to be created either by the external provisioner 'x'",
        )];
        assert!(matches!(
            describe("db", 0, &chosen, &provisioning),
            Claims::Unbound(m) if m.ends_with("by the external provisioner 'x'")
        ));
    }

    #[test]
    fn an_unbound_claim_is_said_in_its_newest_warnings_words() {
        let events = [
            event(
                "2026-01-01T00:00:02Z",
                "Warning",
                "ProvisioningFailed",
                "storageclass.storage.k8s.io \"fast\" not found",
            ),
            // Newer, but a note: the failure stays what is said.
            event(
                "2026-01-01T00:00:05Z",
                "Normal",
                "ExternalProvisioning",
                "Waiting for a volume to be created",
            ),
            event(
                "2026-01-01T00:00:01Z",
                "Normal",
                "WaitForPodScheduled",
                "waiting for pod db-0 to be scheduled",
            ),
        ];
        assert_eq!(
            describe("db", 0, &claim("Pending", Some("fast")), &events),
            Claims::Unbound(
                "Pod db-0 cannot start: its volume claim data-db-0 is not bound (storage class \
                 fast): storageclass.storage.k8s.io \"fast\" not found"
                    .into()
            )
        );
    }

    #[test]
    fn a_bound_claim_is_not_the_reason_and_an_unexplained_one_is_looked_at_again() {
        let events = [event("2026-01-01T00:00:02Z", "Warning", "X", "anything")];
        assert_eq!(
            describe("db", 0, &claim("Bound", None), &events),
            Claims::NotTheReason
        );
        assert_eq!(
            describe("db", 0, &claim("Pending", None), &[]),
            Claims::Unexplained
        );
        let blank = [event("2026-01-01T00:00:02Z", "Warning", "X", "  ")];
        assert_eq!(
            describe("db", 0, &claim("Pending", None), &blank),
            Claims::Unexplained
        );
    }
}
