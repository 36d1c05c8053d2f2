//! A span around every request a Kubernetes client makes (`GET pods`, `APPLY
//! statefulsets.apps`), inside whatever span made it (a person's request, a reconcile),
//! and that trace carried on to the API server in `traceparent` (W3C Trace Context),
//! where an API server that traces continues it. Without a trace exporter (the
//! default) the span is a log span only and no header is sent.

use std::task::{Context, Poll};

use http::Request;
use kube::client::Body;
use tower::{Layer, Service};
use tracing::Instrument as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::request_metrics::classify;

/// Added with `ClientBuilder::with_layer` (or outermost in a hand-built stack).
#[derive(Debug, Clone, Copy, Default)]
pub struct TracedRequestsLayer;

impl<S> Layer<S> for TracedRequestsLayer {
    type Service = TracedRequests<S>;

    fn layer(&self, inner: S) -> Self::Service {
        TracedRequests { inner }
    }
}

#[derive(Debug, Clone)]
pub struct TracedRequests<S> {
    inner: S,
}

impl<S, B> Service<Request<Body>> for TracedRequests<S>
where
    S: Service<Request<Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: 'static,
    B: 'static,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<Body>) -> Self::Future {
        let (verb, resource) = classify(request.method(), request.uri(), request.headers());
        // Kinds and verbs only: names and namespaces stay out of span names.
        let span = tracing::info_span!(
            "kube request",
            otel.name = format!("{} {resource}", verb.as_str()),
            otel.kind = "client",
            http.request.method = %request.method(),
            http.response.status_code = tracing::field::Empty,
        );
        let context = span.context();
        opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.inject_context(
                &context,
                &mut opentelemetry_http::HeaderInjector(request.headers_mut()),
            );
        });
        let response = self.inner.call(request);
        let recorded = span.clone();
        Box::pin(
            async move {
                let result = response.await;
                if let Ok(response) = &result {
                    recorded.record("http.response.status_code", response.status().as_u16());
                }
                result
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// Keeps the headers of the request it is sent, and answers 201.
    #[derive(Clone, Default)]
    struct Keep(Arc<Mutex<Option<http::HeaderMap>>>);

    impl Service<Request<Body>> for Keep {
        type Response = http::Response<Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: Request<Body>) -> Self::Future {
            *self.0.lock().expect("lock") = Some(request.headers().clone());
            let mut response = http::Response::new(Body::empty());
            *response.status_mut() = http::StatusCode::CREATED;
            std::future::ready(Ok(response))
        }
    }

    #[tokio::test]
    async fn a_request_carries_the_trace_of_the_span_that_made_it() {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        let _default = tracing::subscriber::set_default(subscriber);
        let kept = Keep::default();
        let mut traced = TracedRequestsLayer.layer(kept.clone());
        let request = Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
            .body(Body::empty())
            .expect("a request");
        let parent = tracing::info_span!("request");
        let trace_id = parent.context().span().span_context().trace_id();
        // As kube calls it: from inside the caller's span.
        let answer = parent.in_scope(|| traced.call(request));
        let answered = answer.await;
        assert_eq!(answered.expect("answered").status(), 201);
        let headers = kept.0.lock().expect("lock").clone().expect("sent");
        let traceparent = headers["traceparent"].to_str().expect("text");
        // 00-<trace id>-<the request's own span id>-01 (sampled)
        assert!(
            traceparent.starts_with(&format!("00-{trace_id}-")) && traceparent.ends_with("-01"),
            "{traceparent}"
        );
    }
}
