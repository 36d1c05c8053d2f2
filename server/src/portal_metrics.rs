//! Prometheus metrics of the portal: HTTP requests by route and status, what the
//! people's clients ask of the API server, sign-ins and renewals by outcome, refusals
//! of live work by reason, upstream lists and relists, and (set at each scrape from
//! the live state) open sockets, streams and terminals, feeds and viewers by resource,
//! bytes held against the live budget; and the process' own.
//!
//! One set per process ([`PORTAL`]): what is counted happens in every layer, and a
//! scrape reads one process. A leaf: any layer may count into it. Served with the
//! reconciler's on the metrics listener (`web::metrics_route`).

use std::sync::LazyLock;
use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use crate::cluster::request_metrics::{
    ApiLatencyFamily, ApiRequestLabels, ApiRequestsLayer, latency_family,
};

/// The process' portal metrics.
pub static PORTAL: LazyLock<PortalMetrics> = LazyLock::new(PortalMetrics::new);

/// Seconds until a response's head: pages render in milliseconds to tenths; a live
/// stream's head comes at once (its life is not a request's duration).
const HTTP_BUCKETS: [f64; 11] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct HttpLabels {
    pub route: &'static str,
    pub method: &'static str,
    pub status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct HttpRouteLabels {
    pub route: &'static str,
    pub method: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct SignInLabels {
    /// `token` (a pasted token) or `oidc` (single sign-on).
    pub via: &'static str,
    pub outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ReasonLabels {
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ListLabels {
    /// `plural.group`, as kubectl spells kinds.
    pub resource: String,
    /// `first` (a feed starting) or `relist` (410 Gone, changed columns, a problem).
    pub reason: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct ResourceLabels {
    pub resource: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub struct OpenLabels {
    /// `sockets` (tabs), `streams` (SSE), `terminals`, `home_pages`.
    pub what: &'static str,
}

type HttpDurations = Family<HttpRouteLabels, Histogram, fn() -> Histogram>;

fn http_histogram() -> Histogram {
    Histogram::new(HTTP_BUCKETS)
}

/// What is live at a scrape, read from the live state by whoever serves `/metrics`.
#[derive(Debug, Default)]
pub struct LiveNow {
    /// (what, how many open), for [`OpenLabels::what`].
    pub open: Vec<(&'static str, usize)>,
    /// (resource, viewers) for each running feed.
    pub feeds: Vec<(String, usize)>,
    /// Bytes the feeds and log queues hold, and the most they may.
    pub bytes_held: usize,
    pub bytes_limit: usize,
}

#[derive(Debug)]
pub struct PortalMetrics {
    registry: Registry,
    process: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_durations: HttpDurations,
    api_requests: Family<ApiRequestLabels, Counter>,
    api_latencies: ApiLatencyFamily,
    sign_ins: Family<SignInLabels, Counter>,
    renewals: Family<OutcomeLabels, Counter>,
    refusals: Family<ReasonLabels, Counter>,
    lists: Family<ListLabels, Counter>,
    open: Family<OpenLabels, Gauge>,
    feeds: Family<ResourceLabels, Gauge>,
    viewers: Family<ResourceLabels, Gauge>,
    bytes_held: Gauge,
    bytes_limit: Gauge,
    process_gauges: ProcessGauges,
}

#[derive(Debug, Default)]
struct ProcessGauges {
    cpu_seconds: prometheus_client::metrics::gauge::Gauge<f64, std::sync::atomic::AtomicU64>,
    resident_bytes: Gauge,
    virtual_bytes: Gauge,
    open_fds: Gauge,
    threads: Gauge,
    start_time: prometheus_client::metrics::gauge::Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl ProcessGauges {
    /// The registry of the process' own figures, without the portal's prefix: their
    /// names are the ones every Prometheus exporter gives them.
    fn registry(&self) -> Registry {
        let mut registry = Registry::default();
        registry.register_with_unit(
            "process_cpu",
            "Total user and system CPU time spent",
            Unit::Seconds,
            self.cpu_seconds.clone(),
        );
        registry.register_with_unit(
            "process_resident_memory",
            "Resident memory size",
            Unit::Bytes,
            self.resident_bytes.clone(),
        );
        registry.register_with_unit(
            "process_virtual_memory",
            "Virtual memory size",
            Unit::Bytes,
            self.virtual_bytes.clone(),
        );
        registry.register(
            "process_open_fds",
            "Open file descriptors",
            self.open_fds.clone(),
        );
        registry.register("process_threads", "OS threads", self.threads.clone());
        registry.register_with_unit(
            "process_start_time",
            "Start time of the process since the Unix epoch",
            Unit::Seconds,
            self.start_time.clone(),
        );
        registry
    }
}

impl Default for PortalMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl PortalMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("portico");
        let metrics = Self {
            registry: Registry::default(),
            process: Registry::default(),
            http_requests: Family::default(),
            http_durations: HttpDurations::new_with_constructor(http_histogram),
            api_requests: Family::default(),
            api_latencies: latency_family(),
            sign_ins: Family::default(),
            renewals: Family::default(),
            refusals: Family::default(),
            lists: Family::default(),
            open: Family::default(),
            feeds: Family::default(),
            viewers: Family::default(),
            bytes_held: Gauge::default(),
            bytes_limit: Gauge::default(),
            process_gauges: ProcessGauges::default(),
        };
        // Help texts without a final full stop: the registry adds one.
        metrics.register_requests(&mut registry);
        metrics.register_live(&mut registry);
        let process = metrics.process_gauges.registry();
        for via in ["token", "oidc"] {
            drop(
                metrics
                    .sign_ins
                    .get_or_create(&SignInLabels { via, outcome: "ok" }),
            );
        }
        Self {
            registry,
            process,
            ..metrics
        }
    }

    /// Registers what is asked of the portal and of the API server through it: HTTP
    /// requests, the clients' API requests, sign-ins and renewals.
    fn register_requests(&self, registry: &mut Registry) {
        registry.register(
            "http_requests",
            "HTTP requests the portal answered, by route, method and status",
            self.http_requests.clone(),
        );
        registry.register_with_unit(
            "http_request_duration",
            "Time until the portal's answer began, by route and method",
            Unit::Seconds,
            self.http_durations.clone(),
        );
        registry.register(
            "portal_api_requests",
            "Requests the portal's and people's Kubernetes clients made, by verb, resource and response code",
            self.api_requests.clone(),
        );
        registry.register_with_unit(
            "portal_api_request_duration",
            "How long the portal's and people's Kubernetes requests took to be answered, by verb and resource",
            Unit::Seconds,
            self.api_latencies.clone(),
        );
        registry.register(
            "sign_ins",
            "Sign-ins, by how (token or oidc) and how they ended",
            self.sign_ins.clone(),
        );
        registry.register(
            "session_renewals",
            "Renewals of a signed-in person's ID token, by how they ended",
            self.renewals.clone(),
        );
    }

    /// Registers the live work's metrics: refusals, upstream lists, and what is open,
    /// running and held now.
    fn register_live(&self, registry: &mut Registry) {
        registry.register(
            "live_refusals",
            "Live views, streams, sockets, terminals and feeds refused by a bound, by which",
            self.refusals.clone(),
        );
        registry.register(
            "upstream_lists",
            "Lists the live feeds made of the API server, by resource and why (first or relist)",
            self.lists.clone(),
        );
        registry.register(
            "live_open",
            "Live connections open now, by what (sockets, streams, terminals, home_pages)",
            self.open.clone(),
        );
        registry.register(
            "live_feeds",
            "Upstream watches running now, by resource",
            self.feeds.clone(),
        );
        registry.register(
            "live_viewers",
            "Viewers of the running upstream watches, by resource",
            self.viewers.clone(),
        );
        registry.register_with_unit(
            "live_memory_held",
            "Bytes the live tables and log queues hold now",
            Unit::Bytes,
            self.bytes_held.clone(),
        );
        registry.register_with_unit(
            "live_memory_limit",
            "Bytes the live tables and log queues may hold in all",
            Unit::Bytes,
            self.bytes_limit.clone(),
        );
    }

    /// Counts one answered HTTP request.
    pub fn http_request(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
        started: Instant,
    ) {
        self.http_requests
            .get_or_create(&HttpLabels {
                route,
                method,
                status,
            })
            .inc();
        self.http_durations
            .get_or_create(&HttpRouteLabels { route, method })
            .observe(started.elapsed().as_secs_f64());
    }

    /// The layer for the portal's and people's clients (`ClientBuilder::with_layer`).
    pub fn api_layer(&self) -> ApiRequestsLayer {
        ApiRequestsLayer::new(self.api_requests.clone(), self.api_latencies.clone())
    }

    /// A sign-in that ended with `outcome` (the audit log's `result`).
    pub fn sign_in(&self, via: &'static str, outcome: &'static str) {
        self.sign_ins
            .get_or_create(&SignInLabels { via, outcome })
            .inc();
    }

    /// An ID token renewal that ended with `outcome` (`ok` or `failed`).
    pub fn renewal(&self, outcome: &'static str) {
        self.renewals
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Live work refused by the bound named `reason`.
    pub fn refused(&self, reason: &'static str) {
        self.refusals.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// A live feed listing `resource`, for `reason` (`first` or `relist`).
    pub fn listed(&self, resource: String, reason: &'static str) {
        self.lists
            .get_or_create(&ListLabels { resource, reason })
            .inc();
    }

    /// Sets the gauges of what is live now.
    pub fn set_live(&self, now: LiveNow) {
        for (what, open) in now.open {
            self.open
                .get_or_create(&OpenLabels { what })
                .set(as_gauge(open));
        }
        // Resources whose feeds all stopped drop out rather than stay at 0 forever.
        self.feeds.clear();
        self.viewers.clear();
        for (resource, viewers) in now.feeds {
            let labels = ResourceLabels { resource };
            self.feeds.get_or_create(&labels).inc();
            self.viewers
                .get_or_create(&labels)
                .inc_by(as_gauge(viewers));
        }
        self.bytes_held.set(as_gauge(now.bytes_held));
        self.bytes_limit.set(as_gauge(now.bytes_limit));
    }

    /// The portal's families and the process', without `# EOF` (the caller ends the
    /// text after every registry it serves).
    pub fn encode_into(&self, text: &mut String) -> Result<(), std::fmt::Error> {
        self.read_process();
        prometheus_client::encoding::text::encode_registry(text, &self.registry)?;
        prometheus_client::encoding::text::encode_registry(text, &self.process)
    }

    /// The process' figures from `/proc/self`; none where it cannot be read.
    fn read_process(&self) {
        let Ok(me) = procfs::process::Process::myself() else {
            return;
        };
        let gauges = &self.process_gauges;
        if let Ok(stat) = me.stat() {
            let ticks = procfs::ticks_per_second() as f64;
            gauges
                .cpu_seconds
                .set((stat.utime + stat.stime) as f64 / ticks);
            gauges.resident_bytes.set(as_gauge(
                (stat.rss as usize).saturating_mul(procfs::page_size() as usize),
            ));
            gauges.virtual_bytes.set(as_gauge(stat.vsize as usize));
            gauges.threads.set(stat.num_threads);
            if let Ok(boot) = procfs::boot_time_secs() {
                gauges
                    .start_time
                    .set(boot as f64 + stat.starttime as f64 / ticks);
            }
        }
        if let Ok(fds) = me.fd_count() {
            gauges.open_fds.set(as_gauge(fds));
        }
    }
}

fn as_gauge(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A request's route for the `route` label: one of a fixed set, never the path itself
/// (a path is whatever a client sends; the label's values must stay few). `path` is
/// below the base path.
pub fn route_of(path: &str) -> &'static str {
    const ROUTES: [&str; 12] = [
        "/healthz",
        "/readyz",
        "/login",
        "/auth/login",
        "/auth/logout",
        "/auth/start",
        "/auth/callback",
        "/api/live/table",
        "/api/live/crds",
        "/api/live/children",
        "/api/live",
        "/api/exec",
    ];
    if let Some(route) = ROUTES.iter().find(|route| **route == path) {
        return route;
    }
    if path.starts_with("/api/") {
        return "/api/{fn_name}";
    }
    if path.starts_with("/pkg/") || path.starts_with("/xterm/") {
        return "/{site_file}";
    }
    if path.matches('/').count() == 1 && path.contains('.') {
        return "/{site_file}";
    }
    "/{page}"
}

/// `plural[.group]`, as kubectl spells a kind (and as the API server's own metrics do).
pub fn resource_label(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

/// A request's method for the `method` label: the standard ones, or `other`.
pub fn method_of(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::HEAD => "HEAD",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(metrics: &PortalMetrics) -> String {
        let mut text = String::new();
        metrics.encode_into(&mut text).expect("encoded");
        text
    }

    #[test]
    fn routes_and_methods_are_a_fixed_set() {
        let cases = [
            ("/healthz", "/healthz"),
            ("/api/live", "/api/live"),
            ("/api/live/table", "/api/live/table"),
            ("/api/list_kinds12345", "/api/{fn_name}"),
            ("/api/live/whatever", "/api/{fn_name}"),
            ("/pkg/app-0a1b.wasm", "/{site_file}"),
            ("/favicon.ico", "/{site_file}"),
            ("/crds/stacks.portico.dev/team/db", "/{page}"),
            ("/", "/{page}"),
            ("/login", "/login"),
        ];
        for (path, route) in cases {
            assert_eq!(route_of(path), route, "{path}");
        }
        let odd = http::Method::from_bytes(b"BREW").expect("an extension method");
        assert_eq!(method_of(&odd), "other");
    }

    #[test]
    fn what_is_counted_and_what_is_live_are_encoded() {
        let metrics = PortalMetrics::new();
        metrics.http_request("/{page}", "GET", 200, Instant::now());
        metrics.sign_in("token", "refused");
        metrics.refused("FeedsPerPerson");
        metrics.listed("stacks.portico.dev".into(), "relist");
        metrics.set_live(LiveNow {
            open: vec![("sockets", 3)],
            feeds: vec![("pods".into(), 2), ("pods".into(), 1)],
            bytes_held: 4096,
            bytes_limit: 1 << 20,
        });
        let text = encoded(&metrics);
        for line in [
            "portico_http_requests_total{route=\"/{page}\",method=\"GET\",status=\"200\"} 1\n",
            "portico_http_request_duration_seconds_count{route=\"/{page}\",method=\"GET\"} 1\n",
            "portico_sign_ins_total{via=\"token\",outcome=\"refused\"} 1\n",
            "portico_sign_ins_total{via=\"oidc\",outcome=\"ok\"} 0\n",
            "portico_live_refusals_total{reason=\"FeedsPerPerson\"} 1\n",
            "portico_upstream_lists_total{resource=\"stacks.portico.dev\",reason=\"relist\"} 1\n",
            "portico_live_open{what=\"sockets\"} 3\n",
            "portico_live_feeds{resource=\"pods\"} 2\n",
            "portico_live_viewers{resource=\"pods\"} 3\n",
            "portico_live_memory_held_bytes 4096\n",
            "process_resident_memory_bytes ",
            "process_open_fds ",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // Feeds that stopped drop out at the next scrape.
        metrics.set_live(LiveNow::default());
        assert!(!encoded(&metrics).contains("portico_live_feeds{"));
    }
}
