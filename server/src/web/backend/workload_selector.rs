//! Which Pods a workload runs, as a label selector a log view can follow: a
//! Deployment's, StatefulSet's, DaemonSet's, ReplicaSet's or Job's `spec.selector`
//! written the way `kubectl -l` takes it, and a Stack's own labels.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

/// The selector of the Pods the object runs; `None` for a kind that runs none (or a
/// selector that would match every Pod).
pub fn pod_selector(kind: &str, api_version: &str, name: &str, data: &Value) -> Option<String> {
    let runs_pods = matches!(
        (api_version, kind),
        (
            "apps/v1",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
        ) | ("batch/v1", "Job")
    );
    if kind == "Stack" && api_version.starts_with("portico.dev/") {
        return Some(format!(
            "app.kubernetes.io/instance={name},{}={name}",
            crate::reconcile::desired::STACK_LABEL
        ));
    }
    if !runs_pods {
        return None;
    }
    let selector: LabelSelector =
        serde_json::from_value(data.pointer("/spec/selector")?.clone()).ok()?;
    let text = written(&selector);
    (!text.is_empty()).then_some(text)
}

/// `selector` as text: `k=v` for each label, then `k in (a,b)`, `k notin (a,b)`, `k`
/// and `!k` for each expression.
fn written(selector: &LabelSelector) -> String {
    let labels = (selector.match_labels.iter().flatten()).map(|(k, v)| format!("{k}={v}"));
    let expressions = (selector.match_expressions.iter().flatten()).map(|e| {
        let values = e.values.clone().unwrap_or_default().join(",");
        match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        }
    });
    labels.chain(expressions).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_deployments_selector_reads_as_kubectl_takes_it() {
        let data = json!({"spec": {"selector": {
            "matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "stage"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "team", "operator": "Exists"},
                {"key": "zone", "operator": "NotIn", "values": ["a"]}]}}});
        assert_eq!(
            pod_selector("Deployment", "apps/v1", "web", &data).as_deref(),
            Some("app=web,tier=front,env in (prod,stage),!canary,team,zone notin (a)")
        );
    }

    #[test]
    fn a_stack_is_followed_by_its_own_labels_and_other_kinds_have_none() {
        assert_eq!(
            pod_selector("Stack", "portico.dev/v1alpha1", "db", &json!({})).as_deref(),
            Some("app.kubernetes.io/instance=db,portico.dev/stack=db")
        );
        assert_eq!(pod_selector("ConfigMap", "v1", "x", &json!({})), None);
        let empty = json!({"spec": {"selector": {}}});
        assert_eq!(
            pod_selector("Deployment", "apps/v1", "all", &empty),
            None,
            "not every Pod"
        );
    }
}
