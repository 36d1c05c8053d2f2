//! Prometheus metrics of the Stack reconciler: reconciles by outcome and how long they
//! took, failures and blocks by reason, the Stacks still owed a reconcile, whether this
//! replica leads, and every request the reconciler's Kubernetes client makes.
//!
//! Served in the OpenMetrics text format by `web::metrics_route` on a listener of its own
//! (`--metrics-listen`), never on the portal's router: nothing routes it through the
//! Ingress, and the reconciler-only pods have no other listener.

use std::sync::Mutex;
use std::time::Instant;

use kube::runtime::reflector::Store;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::error::{RANDOM, ReconcileError};
use super::stack::Stack;
use portico_cluster::error::Failure;
use portico_cluster::request_metrics::{
    ApiLatencyFamily, ApiRequestLabels, ApiRequestsLayer, latency_family,
};

/// What `/metrics` answers with: the format `prometheus_client`'s text encoder writes
/// (it ends with `# EOF`, which plain Prometheus text does not).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Reconcile durations, in seconds. Most take milliseconds (reads come from the
/// stores, unchanged applies are skipped); a few API round trips take tenths; the
/// first ones wait for every store's initial list.
const DURATION_BUCKETS: [f64; 13] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("encoding the metrics: {0}")]
    Encode(#[from] std::fmt::Error),
}

/// How a reconcile ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Something was written: a child applied or removed, or the status changed.
    Applied,
    /// Everything already matched: nothing was written.
    Unchanged,
    /// The Stack cannot be provisioned as it stands; status says why (its reason).
    Blocked(&'static str),
    /// An error, by reason; the error policy retries with backoff.
    Failed(&'static str),
    /// The Stack is being deleted: the garbage collector removes its children.
    Deleting,
}

impl Outcome {
    /// How a reconcile that returned `error` ended.
    pub fn of(error: &ReconcileError) -> Self {
        match error {
            ReconcileError::Blocked(_) => Self::Blocked(error.metric_reason()),
            ReconcileError::Kube(_) | ReconcileError::Random => Self::Failed(error.metric_reason()),
        }
    }

    pub fn kind(self) -> OutcomeKind {
        match self {
            Self::Applied => OutcomeKind::Applied,
            Self::Unchanged => OutcomeKind::Unchanged,
            Self::Blocked(_) => OutcomeKind::Blocked,
            Self::Failed(_) => OutcomeKind::Failed,
            Self::Deleting => OutcomeKind::Deleting,
        }
    }
}

/// [`Outcome`] without its reason: the `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(serialize_all = "lowercase")]
pub enum OutcomeKind {
    Applied,
    Unchanged,
    Blocked,
    Failed,
    Deleting,
}

impl OutcomeKind {
    const ALL: [Self; 5] = [
        Self::Applied,
        Self::Unchanged,
        Self::Blocked,
        Self::Failed,
        Self::Deleting,
    ];

    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

impl EncodeLabelValue for OutcomeKind {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: OutcomeKind,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct FailureLabels {
    /// [`Failure::name`], or [`RANDOM`].
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct BlockedLabels {
    /// The status condition's reason ([`super::plan::Blocked::reason`]).
    pub reason: &'static str,
}

type DurationFamily = Family<OutcomeLabels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The reconciler's metric families and the registry that encodes them. One per
/// process, shared (`Arc`) by the controller, the leader election, the client's layer
/// and the `/metrics` handler.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<OutcomeLabels, Counter>,
    durations: DurationFamily,
    failures: Family<FailureLabels, Counter>,
    blocked: Family<BlockedLabels, Counter>,
    in_flight: Gauge,
    pending: Gauge,
    leader: Gauge,
    api_requests: Family<ApiRequestLabels, Counter>,
    api_latencies: ApiLatencyFamily,
    /// The Stacks' store while this replica reconciles: `pending` is counted from it
    /// at each scrape, as kube-runtime does not expose its scheduler's queue.
    stacks: Mutex<Option<Store<Stack>>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("portico");
        let reconciles: Family<OutcomeLabels, Counter> = Family::default();
        let durations = DurationFamily::new_with_constructor(duration_histogram);
        let failures: Family<FailureLabels, Counter> = Family::default();
        let blocked: Family<BlockedLabels, Counter> = Family::default();
        let in_flight: Gauge = Gauge::default();
        let pending: Gauge = Gauge::default();
        let leader: Gauge = Gauge::default();
        let api_requests: Family<ApiRequestLabels, Counter> = Family::default();
        let api_latencies = latency_family();
        // Help texts without a final full stop: the registry adds one.
        registry.register(
            "reconcile",
            "Stack reconciles, by how they ended",
            reconciles.clone(),
        );
        registry.register_with_unit(
            "reconcile_duration",
            "How long Stack reconciles took, by how they ended",
            Unit::Seconds,
            durations.clone(),
        );
        registry.register(
            "reconcile_failures",
            "Stack reconciles that failed and are retried with backoff, by reason",
            failures.clone(),
        );
        registry.register(
            "reconcile_blocked",
            "Stack reconciles that found the Stack cannot be provisioned as it stands, by reason",
            blocked.clone(),
        );
        registry.register(
            "reconcile_in_flight",
            "Stack reconciles running now",
            in_flight.clone(),
        );
        registry.register(
            "stacks_pending",
            "Stacks whose current spec (generation) the reconciler has not acted on yet: \
             waiting or in flight; 0 on a replica that does not lead",
            pending.clone(),
        );
        registry.register(
            "reconciler_leader",
            "1 while this replica holds the reconciler's leader Lease and reconciles",
            leader.clone(),
        );
        registry.register(
            "reconciler_api_requests",
            "Requests the reconciler's Kubernetes client made, by verb, resource and response code",
            api_requests.clone(),
        );
        registry.register_with_unit(
            "reconciler_api_request_duration",
            "How long the reconciler's Kubernetes requests took to be answered, by verb and resource",
            Unit::Seconds,
            api_latencies.clone(),
        );
        // Every known series at 0 from the start: rate() and absent-series alerts need
        // a sample before the first event. (A family without series is not encoded.)
        for outcome in OutcomeKind::ALL {
            let labels = OutcomeLabels { outcome };
            drop(reconciles.get_or_create(&labels));
            drop(durations.get_or_create(&labels));
        }
        for reason in Failure::ALL.map(Failure::name).into_iter().chain([RANDOM]) {
            drop(failures.get_or_create(&FailureLabels { reason }));
        }
        for reason in super::plan::Blocked::REASONS {
            drop(blocked.get_or_create(&BlockedLabels { reason }));
        }
        Self {
            registry,
            reconciles,
            durations,
            failures,
            blocked,
            in_flight,
            pending,
            leader,
            api_requests,
            api_latencies,
            stacks: Mutex::default(),
        }
    }

    /// Counts a reconcile in flight until the returned guard is finished or dropped.
    pub fn reconcile_started(&self) -> Reconciling<'_> {
        self.in_flight.inc();
        Reconciling {
            metrics: self,
            started: Instant::now(),
        }
    }

    /// Whether this replica leads (holds the Lease and runs the controller).
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// Counts pending Stacks from `stacks` until the guard drops (when the controller
    /// stops, e.g. on losing the Lease).
    pub fn count_pending_in(&self, stacks: Store<Stack>) -> CountingPending<'_> {
        *self.stacks.lock().unwrap_or_else(|p| p.into_inner()) = Some(stacks);
        CountingPending { metrics: self }
    }

    /// The layer for the reconciler's client (`ClientBuilder::with_layer`).
    pub fn api_layer(&self) -> ApiRequestsLayer {
        ApiRequestsLayer::new(self.api_requests.clone(), self.api_latencies.clone())
    }

    /// Every family in the OpenMetrics text format, `# EOF` included.
    pub fn encode(&self) -> Result<String, MetricsError> {
        let mut text = self.encode_families()?;
        prometheus_client::encoding::text::encode_eof(&mut text)?;
        Ok(text)
    }

    /// Every family, without the final `# EOF` (for a scrape that adds others').
    pub fn encode_families(&self) -> Result<String, std::fmt::Error> {
        self.pending.set(self.count_pending());
        let mut text = String::new();
        prometheus_client::encoding::text::encode_registry(&mut text, &self.registry)?;
        Ok(text)
    }

    fn count_pending(&self) -> i64 {
        // A clone of the handle, so the lock is not held while the store is read.
        let store = self
            .stacks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let Some(store) = store else {
            return 0;
        };
        let pending = store.state_filter(awaits_reconcile).len();
        i64::try_from(pending).unwrap_or(i64::MAX)
    }
}

/// A Stack whose generation its status has not caught up with. Every reconcile that
/// reaches the API server writes `observedGeneration` (applied, blocked, and failed as
/// best effort), so this is a Stack waiting for its first attempt at this spec
/// (debounce, concurrency limit, store not ready) or in it. One retrying after a
/// recorded failure is not: `reconcile_failures` counts those. Stacks being deleted
/// owe nothing.
fn awaits_reconcile(stack: &Stack) -> bool {
    let observed = stack.status.as_ref().and_then(|s| s.observed_generation);
    stack.metadata.deletion_timestamp.is_none()
        && stack.metadata.generation.is_some()
        && observed != stack.metadata.generation
}

/// A reconcile being measured. [`Reconciling::finish`] records how it ended; dropping
/// it without (cancelled, panicked) only ends the in-flight count.
#[must_use = "finish it with the reconcile's outcome"]
pub struct Reconciling<'a> {
    metrics: &'a Metrics,
    started: Instant,
}

impl Reconciling<'_> {
    pub fn finish(self, outcome: Outcome) {
        let metrics = self.metrics;
        let labels = OutcomeLabels {
            outcome: outcome.kind(),
        };
        metrics.reconciles.get_or_create(&labels).inc();
        metrics
            .durations
            .get_or_create(&labels)
            .observe(self.started.elapsed().as_secs_f64());
        match outcome {
            Outcome::Blocked(reason) => {
                metrics
                    .blocked
                    .get_or_create(&BlockedLabels { reason })
                    .inc();
            }
            Outcome::Failed(reason) => {
                metrics
                    .failures
                    .get_or_create(&FailureLabels { reason })
                    .inc();
            }
            Outcome::Applied | Outcome::Unchanged | Outcome::Deleting => {}
        }
        // Drop ends the in-flight count.
    }
}

impl Drop for Reconciling<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
    }
}

/// While alive, `stacks_pending` is counted from the controller's store.
#[must_use = "pending Stacks are counted only while this lives"]
pub struct CountingPending<'a> {
    metrics: &'a Metrics,
}

impl Drop for CountingPending<'_> {
    fn drop(&mut self) {
        *self
            .metrics
            .stacks
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use std::task::{Context, Poll};

    use http::{Request, StatusCode};
    use k8s_openapi::api::coordination::v1::Lease;
    use kube::Api;
    use kube::client::Body;
    use tower::Service;

    use super::*;

    #[test]
    fn reconciles_are_counted_and_timed_by_outcome() {
        let metrics = Metrics::new();
        metrics
            .reconcile_started()
            .finish(Outcome::Blocked("NameConflict"));
        metrics
            .reconcile_started()
            .finish(Outcome::Failed(Failure::Conflict.name()));
        let running = metrics.reconcile_started();
        let text = metrics.encode().expect("encoded");
        assert!(text.contains("portico_reconcile_in_flight 1\n"), "{text}");
        drop(running);
        let text = metrics.encode().expect("encoded");
        for line in [
            "portico_reconcile_total{outcome=\"blocked\"} 1\n",
            "portico_reconcile_total{outcome=\"failed\"} 1\n",
            "portico_reconcile_total{outcome=\"applied\"} 0\n",
            "portico_reconcile_duration_seconds_count{outcome=\"blocked\"} 1\n",
            "portico_reconcile_blocked_total{reason=\"NameConflict\"} 1\n",
            "portico_reconcile_failures_total{reason=\"Conflict\"} 1\n",
            "portico_reconcile_in_flight 0\n",
            "portico_stacks_pending 0\n",
            "portico_reconciler_leader 0\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    /// Answers every request as an API server would, with `status` and `body`.
    struct Answer {
        status: u16,
        body: &'static str,
    }

    impl Service<Request<Body>> for Answer {
        type Response = http::Response<Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<Body>) -> Self::Future {
            let mut response = http::Response::new(Body::from(self.body.as_bytes().to_vec()));
            *response.status_mut() = StatusCode::from_u16(self.status).expect("a status code");
            std::future::ready(Ok(response))
        }
    }

    /// Through a real kube `Client`: the layer fits `ClientBuilder`'s bounds.
    #[tokio::test]
    async fn the_layer_counts_what_a_kube_client_sends() {
        let metrics = Metrics::new();
        let not_found = Answer {
            status: 404,
            body: r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"portico-reconciler\" not found","reason":"NotFound","code":404}"#,
        };
        let client = kube::client::ClientBuilder::new(not_found, "default")
            .with_layer(&metrics.api_layer())
            .build();
        let leases: Api<Lease> = Api::namespaced(client, "portico");
        let lease = leases
            .get_opt("portico-reconciler")
            .await
            .expect("404 is None");
        assert!(lease.is_none());
        let text = metrics.encode().expect("encoded");
        let line = "portico_reconciler_api_requests_total{verb=\"GET\",resource=\"leases.coordination.k8s.io\",code=\"404\"} 1\n";
        assert!(text.contains(line), "{text}");
        let timed = "portico_reconciler_api_request_duration_seconds_count{verb=\"GET\",resource=\"leases.coordination.k8s.io\"} 1\n";
        assert!(text.contains(timed), "{text}");
    }
}
