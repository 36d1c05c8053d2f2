//! Structured logs through `tracing`, and, when a collector is named, the same spans as
//! OpenTelemetry traces over OTLP (HTTP/protobuf): a request, the requests it made of
//! the API server, a reconcile and its writes, each trace carried on to the API
//! server in `traceparent` (`cluster::request_trace`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig as _;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// How log lines are written: for a person reading a terminal, or one JSON object a
/// line for a collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// What traces are sent to, and as whom.
#[derive(Debug, Clone)]
pub struct Traces {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); `/v1/traces` is
    /// added, as `OTEL_EXPORTER_OTLP_ENDPOINT` is read everywhere.
    pub endpoint: String,
    /// `service.name` (`OTEL_SERVICE_NAME`).
    pub service: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP exporter for {endpoint}: {error}")]
    Exporter { endpoint: String, error: String },
}

/// Flushes the spans still queued when dropped (at the end of `main`).
#[must_use = "dropping it sends the traces still queued and stops sending them"]
pub struct Flush(Option<opentelemetry_sdk::trace::SdkTracerProvider>);

impl Drop for Flush {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("sending the last traces: {error}");
        }
    }
}

/// Installs the global subscriber: logs as `format`, filtered by `filter`, and traces
/// to `traces` when given. An invalid filter falls back to `info` rather than refusing
/// to start, and says so.
pub fn init(
    filter: &str,
    format: LogFormat,
    traces: Option<&Traces>,
) -> Result<Flush, TelemetryError> {
    let (env_filter, bad_filter) = match EnvFilter::try_new(filter) {
        Ok(f) => (f, None),
        Err(e) => (EnvFilter::new("info"), Some(e.to_string())),
    };
    // Colours only on a terminal: a log file or a pod's log reads them as noise, and
    // a search for `verb="sign-in"` would miss the line.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let (logs_json, logs_text) = match format {
        LogFormat::Json => (
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_ansi(false),
            ),
            None,
        ),
        LogFormat::Text => (None, Some(tracing_subscriber::fmt::layer().with_ansi(ansi))),
    };
    let provider = traces.map(tracer_provider).transpose()?;
    let traced = provider.as_ref().map(|provider| {
        opentelemetry::global::set_text_map_propagator(
            opentelemetry_sdk::propagation::TraceContextPropagator::new(),
        );
        tracing_opentelemetry::layer().with_tracer(provider.tracer("portico"))
    });
    tracing_subscriber::registry()
        .with(env_filter)
        .with(logs_json)
        .with(logs_text)
        .with(traced)
        .init();
    if let Some(error) = bad_filter {
        tracing::warn!(%error, "invalid log filter; using `info`");
    }
    if let Some(traces) = traces {
        tracing::info!(endpoint = %traces.endpoint, service = %traces.service, "sending traces");
    }
    Ok(Flush(provider))
}

fn tracer_provider(
    traces: &Traces,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, TelemetryError> {
    let endpoint = format!("{}/v1/traces", traces.endpoint.trim_end_matches('/'));
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint.clone())
        .build()
        .map_err(|error| TelemetryError::Exporter {
            endpoint,
            error: error.to_string(),
        })?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name(traces.service.clone())
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}
