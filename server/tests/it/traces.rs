//! Traces, against a real collector: Jaeger (built from the module proxy) on loopback,
//! receiving OTLP/HTTP and answering its query API. A person's request is one trace
//! through the portal to the API server; a Stack's change is one trace through its
//! reconcile and the writes it makes.

use std::process::Stdio;

use portico_control_plane::cluster::TestCluster;
use serde_json::{Value, json};

use crate::kit::jaeger::Jaeger;

/// The span of `trace` named `name`.
fn span<'a>(trace: &'a Value, name: &str) -> Option<&'a Value> {
    trace["spans"]
        .as_array()?
        .iter()
        .find(|s| s["operationName"] == name)
}

/// The spans of `trace` whose parent is `parent`.
fn children<'a>(trace: &'a Value, parent: &Value) -> Vec<&'a Value> {
    let id = &parent["spanID"];
    trace["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| {
            s["references"].as_array().is_some_and(|r| {
                r.iter()
                    .any(|r| r["refType"] == "CHILD_OF" && &r["spanID"] == id)
            })
        })
        .collect()
}

fn tag<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["tags"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| &t["value"])
}

/// A sign-in is one trace: the portal's server span for the request, carrying the
/// request's id (the one sent back to the browser), and under it the client span of
/// the request it made of the API server as the person (who they are), with the API
/// server's answer.
#[tokio::test]
async fn a_request_is_one_trace_through_the_portal_to_the_api_server() {
    let jaeger = Jaeger::start().await;
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "traced").await;
    let cluster = TestCluster::shared();
    let (origin, _portico, _) = crate::kit::process::token_mode_portico(
        std::path::Path::new(env!("CARGO_BIN_EXE_portico")),
        cluster.admin_kubeconfig(),
        &["--otlp-endpoint", &jaeger.otlp, "--log", "info"],
    )
    .await;
    let token = crate::kit::account_token(&admin, &ns, "traced").await;
    let signed_in = crate::kit::sign_in_answer(&origin, &token).await;
    assert!(
        signed_in.status().is_redirection(),
        "{}",
        signed_in.status()
    );
    let request_id = signed_in.headers()["x-request-id"]
        .to_str()
        .expect("an id")
        .to_string();
    assert!(uuid_like(&request_id), "{request_id}");

    let trace = jaeger
        .until_trace("portico", |t| {
            span(t, "POST /auth/login").is_some_and(|s| tag(s, "id") == Some(&json!(request_id)))
        })
        .await;
    let server = span(&trace, "POST /auth/login").expect("the request's span");
    assert_eq!(tag(server, "span.kind"), Some(&json!("server")));
    let asked: Vec<&str> = children(&trace, server)
        .into_iter()
        .filter(|s| tag(s, "span.kind") == Some(&json!("client")))
        .filter_map(|s| s["operationName"].as_str())
        .collect();
    assert!(
        asked
            .iter()
            .any(|name| name.starts_with("POST selfsubjectreviews.authentication.k8s.io")),
        "the API server requests under the sign-in: {asked:?}\n{trace:#}"
    );
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
}

/// A Stack's change is one trace: the reconcile's span (the Stack named), and under it
/// the writes it made of its children.
#[tokio::test]
async fn a_stacks_reconcile_is_one_trace_with_its_writes() {
    let jaeger = Jaeger::start().await;
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "traced-stack").await;
    let cluster = TestCluster::shared();
    let _reconciler = tokio::process::Command::new(env!("CARGO_BIN_EXE_portico"))
        .args([
            "--reconciler",
            "only",
            "--otlp-endpoint",
            &jaeger.otlp,
            "--log",
            "info",
        ])
        .args(["--replica-name", &format!("traced-{ns}")])
        .env("KUBECONFIG", cluster.admin_kubeconfig())
        .env("POD_NAMESPACE", &ns)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the reconciler starts");
    let stacks: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        admin.clone(),
        &ns,
        &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "portico.dev",
            "v1alpha1",
            "Stack",
        )),
    );
    let stack: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"choice": "tomcat"}
    }))
    .expect("a Stack");
    stacks
        .create(&kube::api::PostParams::default(), &stack)
        .await
        .expect("the Stack is created");

    let key = format!("{ns}/web");
    let trace = jaeger
        .until_trace("portico", |t| {
            span(t, "reconcile").is_some_and(|s| tag(s, "stack") == Some(&json!(key)))
                && t["spans"].as_array().is_some_and(|spans| {
                    spans
                        .iter()
                        .any(|s| s["operationName"] == "APPLY deployments.apps")
                })
        })
        .await;
    let reconcile = span(&trace, "reconcile").expect("the reconcile's span");
    let writes: Vec<&str> = trace["spans"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| tag(s, "span.kind") == Some(&json!("client")))
        .filter_map(|s| s["operationName"].as_str())
        .collect();
    for child in ["APPLY deployments.apps", "APPLY services"] {
        assert!(writes.contains(&child), "{child} in {writes:?}");
    }
    assert!(!children(&trace, reconcile).is_empty(), "{trace:#}");
}
