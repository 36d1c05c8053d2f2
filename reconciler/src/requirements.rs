//! What the reconciler's safety rests on, checked before it starts: its writes are
//! bounded by the ValidatingAdmissionPolicy `portico-reconciler-writes`
//! (deploy/base/reconciler-policy.yaml). A cluster that does not serve the API that
//! policy is written in would admit every write its broad RBAC allows, so the
//! reconciler refuses to start there, saying why in one sentence.

/// The group version the reconciler's policy is written in (GA in Kubernetes 1.30).
pub const POLICY_API: &str = "admissionregistration.k8s.io/v1";
const POLICY_RESOURCE: &str = "validatingadmissionpolicies";

#[derive(Debug, thiserror::Error)]
pub enum RequirementError {
    #[error(
        "the reconciler does not start: this cluster does not serve ValidatingAdmissionPolicy \
         ({POLICY_API}, Kubernetes 1.30 or newer; Portico supports 1.32 and newer), which \
         bounds what it may write"
    )]
    NoAdmissionPolicy,
    #[error("the reconciler could not read the cluster's API discovery: {0}")]
    Discovery(#[source] kube::Error),
}

/// Ok when the cluster serves ValidatingAdmissionPolicy v1.
pub async fn check(client: &kube::Client) -> Result<(), RequirementError> {
    match client.list_api_group_resources(POLICY_API).await {
        Ok(list) if list.resources.iter().any(|r| r.name == POLICY_RESOURCE) => Ok(()),
        Ok(_) => Err(RequirementError::NoAdmissionPolicy),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Err(RequirementError::NoAdmissionPolicy)
        }
        Err(other) => Err(RequirementError::Discovery(other)),
    }
}

#[cfg(test)]
mod tests {
    use http::{Request, Response, StatusCode};
    use kube::client::Body;
    use serde_json::json;
    use tower_test::mock;

    use super::*;

    /// Answers the one discovery request `check` makes with `status` and `body`.
    async fn checked_against(
        status: StatusCode,
        body: serde_json::Value,
    ) -> Result<(), RequirementError> {
        let (service, mut api_server) = mock::pair::<Request<Body>, Response<Body>>();
        let client = kube::Client::new(service, "default");
        let server = tokio::spawn(async move {
            let (request, respond) = api_server.next_request().await.expect("a request");
            assert_eq!(
                request.uri().path(),
                "/apis/admissionregistration.k8s.io/v1"
            );
            let answer = Response::builder()
                .status(status)
                .body(Body::from(body.to_string().into_bytes()))
                .expect("a response");
            respond.send_response(answer);
        });
        let result = check(&client).await;
        server.await.expect("the mock API server");
        result
    }

    #[tokio::test]
    async fn a_cluster_without_the_policy_api_is_refused_in_one_sentence() {
        let not_found = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "the server could not find the requested resource",
            "reason": "NotFound", "code": 404
        });
        let error = checked_against(StatusCode::NOT_FOUND, not_found)
            .await
            .expect_err("refused");
        assert!(matches!(error, RequirementError::NoAdmissionPolicy));
        let sentence = error.to_string();
        assert!(sentence.contains("ValidatingAdmissionPolicy"), "{sentence}");
        assert!(!sentence.contains('\n'), "{sentence}");
    }

    #[tokio::test]
    async fn a_group_without_the_policy_resource_is_refused() {
        let webhooks_only = json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": POLICY_API,
            "resources": [{"name": "validatingwebhookconfigurations", "singularName": "",
                "namespaced": false, "kind": "ValidatingWebhookConfiguration", "verbs": ["list"]}]
        });
        let error = checked_against(StatusCode::OK, webhooks_only)
            .await
            .expect_err("refused");
        assert!(matches!(error, RequirementError::NoAdmissionPolicy));
    }

    #[tokio::test]
    async fn a_cluster_serving_the_policy_api_passes() {
        let served = json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": POLICY_API,
            "resources": [{"name": POLICY_RESOURCE, "singularName": "",
                "namespaced": false, "kind": "ValidatingAdmissionPolicy", "verbs": ["list"]}]
        });
        checked_against(StatusCode::OK, served)
            .await
            .expect("served");
    }
}
