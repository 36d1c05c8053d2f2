//! A Stack's status, derived from what its children report: phase, the Ready /
//! Progressing / Degraded conditions (transition times kept while a condition holds),
//! observedGeneration, endpoint and the credentials Secret's name. Pure.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::stack::{Endpoint, StackStatus};

/// What the reconciler saw of the children after applying them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub replicas: i32,
    pub ready_replicas: i32,
    /// The workload controller has seen the latest workload spec.
    pub rolled_out: bool,
    pub endpoint: Option<Endpoint>,
    pub credentials_secret: Option<String>,
    /// The version the workload runs, as the catalog names it.
    pub version: Option<String>,
}

/// Why the Stack cannot be provisioned as asked (shown as Degraded).
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub reason: String,
    pub message: String,
}

fn condition(type_: &str, status: bool, reason: &str, message: String) -> Condition {
    Condition {
        type_: type_.into(),
        status: if status { "True" } else { "False" }.into(),
        reason: reason.into(),
        message,
        // Set below: kept from the previous status while the condition holds.
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
        observed_generation: None,
    }
}

/// The status to write. `previous` supplies transition times of unchanged conditions.
pub fn derive(
    previous: Option<&StackStatus>,
    generation: Option<i64>,
    observed: &Observed,
    problem: Option<&Problem>,
    now: Timestamp,
) -> StackStatus {
    let ready = problem.is_none()
        && observed.rolled_out
        && observed.ready_replicas >= observed.replicas
        && observed.replicas > 0;
    let counts = format!(
        "{} of {} replicas ready",
        observed.ready_replicas, observed.replicas
    );
    let mut conditions = vec![
        match (ready, problem) {
            (true, _) => condition("Ready", true, "AllReplicasReady", counts.clone()),
            // The replicas may be fine; the Stack as asked is not.
            (false, Some(_)) => condition(
                "Ready",
                false,
                "Blocked",
                format!("{counts}; see Degraded."),
            ),
            (false, None) => condition("Ready", false, "ReplicasNotReady", counts.clone()),
        },
        match (ready, problem) {
            (true, _) => condition("Progressing", false, "RolloutComplete", counts),
            (false, Some(_)) => condition("Progressing", false, "Blocked", "See Degraded.".into()),
            (false, None) => condition("Progressing", true, "RollingOut", counts),
        },
        match problem {
            Some(p) => condition("Degraded", true, &p.reason, p.message.clone()),
            None => condition("Degraded", false, "AsExpected", String::new()),
        },
    ];
    for c in &mut conditions {
        let kept = previous
            .and_then(|p| p.conditions.iter().find(|o| o.type_ == c.type_))
            .filter(|o| o.status == c.status)
            .map(|o| o.last_transition_time.clone());
        c.last_transition_time = kept.unwrap_or(Time(now));
        c.observed_generation = generation;
    }
    let phase = match (problem, ready) {
        (Some(_), _) => "Degraded",
        (None, true) => "Ready",
        (None, false) => "Progressing",
    };
    StackStatus {
        phase: Some(phase.into()),
        observed_generation: generation,
        credentials_secret: observed.credentials_secret.clone(),
        version: observed.version.clone(),
        endpoint: observed.endpoint.clone(),
        conditions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(ready: i32) -> Observed {
        Observed {
            replicas: 2,
            ready_replicas: ready,
            rolled_out: true,
            ..Default::default()
        }
    }

    fn status_of<'a>(s: &'a StackStatus, t: &str) -> &'a str {
        &s.conditions.iter().find(|c| c.type_ == t).expect(t).status
    }

    #[test]
    fn ready_when_every_replica_is_ready_and_transition_times_hold() {
        let (t1, t2) = (Timestamp::from_second(1), Timestamp::from_second(2));
        let (t1, t2) = (t1.expect("a time"), t2.expect("a time"));
        let first = derive(None, Some(1), &observed(1), None, t1);
        assert_eq!(first.phase.as_deref(), Some("Progressing"));
        assert_eq!(status_of(&first, "Ready"), "False");
        assert_eq!(status_of(&first, "Progressing"), "True");
        let second = derive(Some(&first), Some(1), &observed(2), None, t2);
        assert_eq!(second.phase.as_deref(), Some("Ready"));
        let ready = second
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .expect("Ready");
        assert_eq!(
            (ready.status.as_str(), &ready.last_transition_time),
            ("True", &Time(t2))
        );
        let degraded = second
            .conditions
            .iter()
            .find(|c| c.type_ == "Degraded")
            .expect("Degraded");
        assert_eq!(
            degraded.last_transition_time,
            Time(t1),
            "unchanged since t1"
        );
        assert_eq!(second.observed_generation, Some(1));
    }

    #[test]
    fn a_problem_is_degraded_and_never_ready() {
        let p = Problem {
            reason: "UnknownVersion".into(),
            message: "no 7".into(),
        };
        let s = derive(None, Some(3), &observed(2), Some(&p), Timestamp::UNIX_EPOCH);
        assert_eq!(s.phase.as_deref(), Some("Degraded"));
        assert_eq!(status_of(&s, "Ready"), "False");
        assert_eq!(status_of(&s, "Degraded"), "True");
        // What the children report is kept, not replaced by "0 of 0".
        let ready = s
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .expect("Ready");
        assert_eq!(
            (ready.reason.as_str(), ready.message.as_str()),
            ("Blocked", "2 of 2 replicas ready; see Degraded.")
        );
    }

    #[test]
    fn a_rollout_in_progress_is_not_ready() {
        let mut o = observed(2);
        o.rolled_out = false;
        assert_eq!(
            derive(None, None, &o, None, Timestamp::UNIX_EPOCH)
                .phase
                .as_deref(),
            Some("Progressing")
        );
    }
}
