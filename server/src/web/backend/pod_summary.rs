//! A Pod at a glance, for its page: phase, node, addresses and each container's image,
//! state, restarts, requests and limits, read from the Pod as the API server has it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerState, ContainerStatus, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use portico_core::payload::{ContainerSummary, PodSummary};
use serde_json::Value;

/// The summary of the Pod whose `spec` and `status` `data` holds (a DynamicObject's
/// data); `None` when they are not a Pod's.
pub fn pod_summary(data: &Value) -> Option<PodSummary> {
    let spec: PodSpec = serde_json::from_value(data.get("spec")?.clone()).ok()?;
    let status: PodStatus = match data.get("status") {
        Some(status) => serde_json::from_value(status.clone()).ok()?,
        None => PodStatus::default(),
    };
    let phase = status.phase.clone().unwrap_or_else(|| "Unknown".into());
    let phase = match &status.reason {
        Some(reason) => format!("{phase}: {reason}"),
        None => phase,
    };
    let statuses = |list: &Option<Vec<ContainerStatus>>| -> BTreeMap<String, ContainerStatus> {
        (list.iter().flatten())
            .map(|s| (s.name.clone(), s.clone()))
            .collect()
    };
    let init_statuses = statuses(&status.init_container_statuses);
    let main_statuses = statuses(&status.container_statuses);
    let init = (spec.init_containers.iter().flatten()).map(|c| container(c, true, &init_statuses));
    let main = spec
        .containers
        .iter()
        .map(|c| container(c, false, &main_statuses));
    Some(PodSummary {
        phase,
        node: spec.node_name,
        pod_ip: status.pod_ip,
        host_ip: status.host_ip,
        qos: status.qos_class,
        containers: init.chain(main).collect(),
    })
}

fn container(
    c: &Container,
    init: bool,
    statuses: &BTreeMap<String, ContainerStatus>,
) -> ContainerSummary {
    let status = statuses.get(&c.name);
    let (state, since) = status
        .and_then(|s| s.state.as_ref())
        .map(state_of)
        .unwrap_or_else(|| ("Not started".into(), None));
    let quantities = |list: Option<&BTreeMap<String, Quantity>>| -> Vec<(String, String)> {
        (list.into_iter().flatten())
            .map(|(k, v)| (k.clone(), v.0.clone()))
            .collect()
    };
    let resources = c.resources.as_ref();
    ContainerSummary {
        name: c.name.clone(),
        init,
        image: c.image.clone().unwrap_or_default(),
        ready: status.is_some_and(|s| s.ready),
        restarts: status.map_or(0, |s| s.restart_count),
        state,
        since,
        requests: quantities(resources.and_then(|r| r.requests.as_ref())),
        limits: quantities(resources.and_then(|r| r.limits.as_ref())),
    }
}

/// The state in words, and since when.
fn state_of(state: &ContainerState) -> (String, Option<String>) {
    if let Some(running) = &state.running {
        return (
            "Running".into(),
            running.started_at.as_ref().map(|t| t.0.to_string()),
        );
    }
    if let Some(waiting) = &state.waiting {
        let reason = waiting.reason.as_deref().unwrap_or("waiting");
        return (format!("Waiting: {reason}"), None);
    }
    if let Some(done) = &state.terminated {
        let reason = done.reason.as_deref().unwrap_or("ended");
        return (
            format!("Terminated: {reason} (exit {})", done.exit_code),
            done.finished_at.as_ref().map(|t| t.0.to_string()),
        );
    }
    ("Not started".into(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pod_reads_as_its_phase_place_and_containers() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "db-0"},
            "spec": {
                "nodeName": "node-1",
                "initContainers": [{"name": "setup", "image": "busybox:1"}],
                "containers": [{"name": "db", "image": "mariadb:10.11",
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"},
                                  "limits": {"memory": "2Gi"}}}]},
            "status": {
                "phase": "Running", "podIP": "10.0.0.7", "hostIP": "192.168.1.2",
                "qosClass": "Burstable",
                "initContainerStatuses": [{"name": "setup", "image": "busybox:1", "imageID": "",
                    "ready": true, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [{"name": "db", "image": "mariadb:10.11", "imageID": "",
                    "ready": false, "restartCount": 3,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}
        });
        let summary = pod_summary(&pod).expect("a Pod");
        assert_eq!(summary.phase, "Running");
        assert_eq!(summary.node.as_deref(), Some("node-1"));
        assert_eq!(summary.qos.as_deref(), Some("Burstable"));
        let [setup, db] = summary.containers.as_slice() else {
            panic!("two containers: {:?}", summary.containers);
        };
        assert!(setup.init);
        assert_eq!(setup.state, "Terminated: Completed (exit 0)");
        assert_eq!(db.state, "Waiting: CrashLoopBackOff");
        assert_eq!(db.restarts, 3);
        assert!(!db.ready);
        assert_eq!(
            db.requests,
            [
                ("cpu".to_string(), "100m".to_string()),
                ("memory".into(), "256Mi".into())
            ]
        );
        assert_eq!(db.limits, [("memory".to_string(), "2Gi".to_string())]);
    }

    #[test]
    fn a_pod_not_yet_scheduled_has_no_place_and_nothing_started() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Pending"}});
        let summary = pod_summary(&pod).expect("a Pod");
        assert_eq!(summary.node, None);
        assert_eq!(summary.containers[0].state, "Not started");
    }

    #[test]
    fn anything_but_a_pod_has_none() {
        assert_eq!(
            pod_summary(&json!({"spec": {"containers": "not a list"}})),
            None
        );
    }
}
