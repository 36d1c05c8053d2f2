//! What the portal's and the reconciler's Kubernetes clients ask of the API server,
//! counted: a tower layer ([`ApiRequestsLayer`]) that classifies every request by verb
//! and resource as the API server's own `apiserver_request_total` does, counts it with
//! its answer and times it until the answer's head arrives, into metric families its
//! owner registers.

use std::fmt::Write as _;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use http::{HeaderMap, Method, Request, Uri, header};
use kube::client::Body;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use tower::{Layer, Service};

/// A Kubernetes API verb as the API server's own metrics name it
/// (`apiserver_request_total`): the HTTP method, told apart by what it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "UPPERCASE")]
pub enum Verb {
    Get,
    List,
    Watch,
    Post,
    Put,
    /// Server-side apply: PATCH with `application/apply-patch+yaml`.
    Apply,
    /// Any other PATCH (merge, JSON, strategic).
    Patch,
    Delete,
    DeleteCollection,
    Other,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl EncodeLabelValue for Verb {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// The answer to an API request: its status code, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    Status(u16),
    /// No response: connection, TLS or timeout (client-go's spelling).
    Error,
    /// The caller stopped waiting (e.g. the Lease renewal's timeout) before an answer.
    Cancelled,
}

impl EncodeLabelValue for Code {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self {
            Self::Status(code) => write!(encoder, "{code}"),
            Self::Error => encoder.write_str("<error>"),
            Self::Cancelled => encoder.write_str("<cancelled>"),
        }
    }
}

/// No names or namespaces: the series stay as few as the kinds the reconciler touches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ApiRequestLabels {
    pub verb: Verb,
    /// `plural[.group][/subresource]`, as kubectl spells kinds (`statefulsets.apps`).
    pub resource: String,
    pub code: Code,
}

/// The duration series' labels: a request's verb and resource, whatever its answer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ApiLatencyLabels {
    pub verb: Verb,
    /// As [`ApiRequestLabels::resource`].
    pub resource: String,
}

pub type ApiLatencyFamily = Family<ApiLatencyLabels, Histogram, fn() -> Histogram>;

/// Seconds from sending a request to its answer's head: a local API server answers
/// in milliseconds, a loaded one in tenths, a stuck one at a client's timeout.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// An empty duration family, for [`ApiRequestsLayer::new`].
pub fn latency_family() -> ApiLatencyFamily {
    ApiLatencyFamily::new_with_constructor(latency_histogram)
}

/// Counts and times the requests of the kube client it wraps. Added last
/// (`ClientBuilder::try_from(config)?.with_layer(&layer)`), it sits outside kube's own
/// stack: one count per request as the reconciler made it, with the status after
/// kube's retries, and a relative URI (before the cluster URL is prepended).
#[derive(Debug, Clone)]
pub struct ApiRequestsLayer {
    requests: Family<ApiRequestLabels, Counter>,
    latencies: ApiLatencyFamily,
}

impl ApiRequestsLayer {
    /// Counts into `requests` and times into `latencies` (both registered by the caller).
    pub fn new(requests: Family<ApiRequestLabels, Counter>, latencies: ApiLatencyFamily) -> Self {
        Self {
            requests,
            latencies,
        }
    }
}

impl<S> Layer<S> for ApiRequestsLayer {
    type Service = ApiRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ApiRequests {
            inner,
            requests: self.requests.clone(),
            latencies: self.latencies.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ApiRequests<S> {
    inner: S,
    requests: Family<ApiRequestLabels, Counter>,
    latencies: ApiLatencyFamily,
}

// The bounds `ClientBuilder::build` puts on its service (Send + 'static, a Send +
// 'static future) hold for `ApiRequests<S>` whenever they hold for `S`: the future is
// boxed, as kube's own stack (`BoxService`) boxes it anyway.
impl<S, B> Service<Request<Body>> for ApiRequests<S>
where
    S: Service<Request<Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    B: 'static,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (verb, resource) = classify(request.method(), request.uri(), request.headers());
        let mut counting = Counting {
            requests: self.requests.clone(),
            latencies: self.latencies.clone(),
            labels: Some((verb, resource)),
            started: Instant::now(),
        };
        let response = self.inner.call(request);
        Box::pin(async move {
            let result = response.await;
            counting.count(match &result {
                Ok(response) => Code::Status(response.status().as_u16()),
                Err(_) => Code::Error,
            });
            result
        })
    }
}

/// One request's count, made when it is answered, or on drop as cancelled: a caller
/// that gives up (a timeout) drops the future, and those are the requests worth seeing.
struct Counting {
    requests: Family<ApiRequestLabels, Counter>,
    latencies: ApiLatencyFamily,
    labels: Option<(Verb, String)>,
    started: Instant,
}

impl Counting {
    fn count(&mut self, code: Code) {
        if let Some((verb, resource)) = self.labels.take() {
            if matches!(code, Code::Status(_)) {
                self.latencies
                    .get_or_create(&ApiLatencyLabels {
                        verb,
                        resource: resource.clone(),
                    })
                    .observe(self.started.elapsed().as_secs_f64());
            }
            self.requests
                .get_or_create(&ApiRequestLabels {
                    verb,
                    resource,
                    code,
                })
                .inc();
        }
    }
}

impl Drop for Counting {
    fn drop(&mut self) {
        self.count(Code::Cancelled);
    }
}

/// The verb and resource of a request, read as the API server's RequestInfo reads it:
/// `/api/{version}/…` or `/apis/{group}/{version}/…`, then an optional `watch/`,
/// `namespaces/{namespace}/`, `{resource}[/{name}[/{subresource}]]`.
pub(crate) fn classify(method: &Method, uri: &Uri, headers: &HeaderMap) -> (Verb, String) {
    let segments: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        // /version, /openapi/…, /api and /apis discovery.
        other => return (verb(method, true, false, headers), non_resource(other)),
    };
    let (watch_path, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    // `namespaces/{ns}/{resource}…` is in a namespace, but `namespaces/{name}/status`
    // and `/finalize` are the Namespace's own subresources.
    let rest = match rest {
        ["namespaces", _namespace, inner @ ..]
            if inner
                .first()
                .is_some_and(|next| !matches!(*next, "status" | "finalize")) =>
        {
            inner
        }
        _ => rest,
    };
    let (resource, named, subresource) = match rest {
        // A group version's discovery (/apis/apps/v1).
        [] => return (verb(method, true, false, headers), non_resource(&segments)),
        [resource] => (*resource, false, None),
        [resource, _name] => (*resource, true, None),
        [resource, _name, subresource, ..] => (*resource, true, Some(*subresource)),
    };
    let watch = watch_path || asks_to_watch(uri);
    let mut label = String::from(resource);
    if !group.is_empty() {
        label.push('.');
        label.push_str(group);
    }
    if let Some(subresource) = subresource {
        label.push('/');
        label.push_str(subresource);
    }
    (verb(method, named, watch, headers), label)
}

fn verb(method: &Method, named: bool, watch: bool, headers: &HeaderMap) -> Verb {
    match method.as_str() {
        "GET" | "HEAD" if watch => Verb::Watch,
        "GET" | "HEAD" if named => Verb::Get,
        "GET" | "HEAD" => Verb::List,
        "POST" => Verb::Post,
        "PUT" => Verb::Put,
        "PATCH" if is_apply(headers) => Verb::Apply,
        "PATCH" => Verb::Patch,
        "DELETE" if named => Verb::Delete,
        "DELETE" => Verb::DeleteCollection,
        _ => Verb::Other,
    }
}

/// kube sends `Patch::Apply` as `application/apply-patch+yaml`.
fn is_apply(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/apply-patch"))
}

/// kube's watches are `GET …?&watch=true&…`.
fn asks_to_watch(uri: &Uri) -> bool {
    uri.query()
        .is_some_and(|q| q.split('&').any(|p| matches!(p, "watch=true" | "watch=1")))
}

/// A request outside the resource paths, by its first segment only (`/version`).
fn non_resource(segments: &[&str]) -> String {
    match segments.first() {
        Some(first) => format!("/{first}"),
        None => "/".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classified(method: &str, uri: &str, content_type: Option<&str>) -> (&'static str, String) {
        let mut request = Request::builder().method(method).uri(uri);
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let request = request.body(Body::empty()).expect("a request");
        let (verb, resource) = classify(request.method(), request.uri(), request.headers());
        (verb.as_str(), resource)
    }

    #[test]
    fn requests_are_classified_as_the_api_server_does() {
        let apply = Some("application/apply-patch+yaml");
        let merge = Some("application/merge-patch+json");
        let apps = "/apis/apps/v1/namespaces/team";
        let core = "/api/v1/namespaces/team";
        // (method, path, content type) → (verb, resource)
        let cases = [
            (
                "PATCH",
                format!("{apps}/statefulsets/db?&fieldManager=portico-reconciler&force=true"),
                apply,
                "APPLY",
                "statefulsets.apps",
            ),
            (
                "PATCH",
                "/apis/portico.dev/v1alpha1/namespaces/team/stacks/db/status?".into(),
                merge,
                "PATCH",
                "stacks.portico.dev/status",
            ),
            (
                "GET",
                format!("{core}/secrets/db-credentials"),
                None,
                "GET",
                "secrets",
            ),
            (
                "GET",
                "/api/v1/pods?&labelSelector=portico.dev%2Fstack".into(),
                None,
                "LIST",
                "pods",
            ),
            (
                "GET",
                "/api/v1/pods?&watch=true&timeoutSeconds=290&resourceVersion=5".into(),
                None,
                "WATCH",
                "pods",
            ),
            (
                "GET",
                "/apis/apps/v1/watch/namespaces/team/deployments".into(),
                None,
                "WATCH",
                "deployments.apps",
            ),
            (
                "PUT",
                "/apis/coordination.k8s.io/v1/namespaces/portico/leases/portico-reconciler?".into(),
                None,
                "PUT",
                "leases.coordination.k8s.io",
            ),
            (
                "POST",
                "/apis/events.k8s.io/v1/namespaces/team/events?".into(),
                None,
                "POST",
                "events.events.k8s.io",
            ),
            (
                "DELETE",
                format!("{apps}/deployments/web"),
                None,
                "DELETE",
                "deployments.apps",
            ),
            (
                "DELETE",
                format!("{core}/pods"),
                None,
                "DELETECOLLECTION",
                "pods",
            ),
            ("GET", core.into(), None, "GET", "namespaces"),
            (
                "GET",
                "/api/v1/namespaces".into(),
                None,
                "LIST",
                "namespaces",
            ),
            (
                "PUT",
                format!("{core}/finalize"),
                None,
                "PUT",
                "namespaces/finalize",
            ),
            ("GET", "/version".into(), None, "GET", "/version"),
            ("GET", "/apis/apps/v1".into(), None, "GET", "/apis"),
        ];
        for (method, uri, content_type, verb, resource) in cases {
            assert_eq!(
                classified(method, &uri, content_type),
                (verb, resource.to_string()),
                "{method} {uri}"
            );
        }
    }
}
