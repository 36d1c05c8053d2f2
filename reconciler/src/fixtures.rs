//! Test fixtures for the reconciler (as kube-rs/controller-rs' `fixtures.rs`): a
//! Stack, what its children report, and the executor wired to a mock API server that
//! each test drives, answering requests as the API server would.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use kube::runtime::events::{Recorder, Reporter};
use serde_json::{Value, json};
use tower_test::mock;

use super::change_filter::Applied;
use super::executor::{Executor, MANAGER};
use super::stack::Stack;
use super::status::Observed;

pub(super) type ApiServer = mock::Handle<Request<Body>, Response<Body>>;

pub(super) fn executor() -> (Executor, ApiServer) {
    let (service, api_server) = mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(service, "default");
    let reporter = Reporter {
        controller: MANAGER.into(),
        instance: Some("test".into()),
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let executor = Executor::new(client, Arc::new(Applied::default()), recorder);
    (executor, api_server)
}

pub(super) fn stack(status: Option<Value>) -> Stack {
    serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1",
        "kind": "Stack",
        "metadata": {"name": "db", "namespace": "shop", "uid": "u-1", "generation": 2},
        "spec": {"choice": "mysql", "replicas": 1},
        "status": status,
    }))
    .expect("a Stack")
}

pub(super) fn ready() -> Observed {
    Observed {
        replicas: 1,
        ready_replicas: 1,
        rolled_out: true,
        endpoint: None,
        credentials_secret: Some("db-credentials".into()),
        version: Some("8.0".into()),
    }
}

/// Takes the next request, checks where it goes, answers `status` with `body`,
/// and hands back what was sent.
pub(super) async fn expect(
    api_server: &mut ApiServer,
    method: Method,
    path: &str,
    status: StatusCode,
    body: Value,
) -> Value {
    let (request, respond) = api_server.next_request().await.expect("a request");
    assert_eq!((request.method(), request.uri().path()), (&method, path));
    let sent = request
        .into_body()
        .collect_bytes()
        .await
        .expect("the request's body");
    let sent = serde_json::from_slice(&sent).unwrap_or(Value::Null);
    let answer = Response::builder()
        .status(status)
        .body(Body::from(body.to_string().into_bytes()))
        .expect("a response");
    respond.send_response(answer);
    sent
}
