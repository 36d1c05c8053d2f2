//! Jaeger (built from the module proxy) on loopback, for the traces tests and the
//! observability benchmark: OTLP/HTTP in, its query API out, traces kept in memory.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

/// Jaeger with in-memory storage: OTLP/HTTP in on `otlp`, its HTTP query API on `query`.
pub struct Jaeger {
    /// Where to send OTLP/HTTP (`--otlp-endpoint`).
    pub otlp: String,
    /// The query API's base URL.
    pub query: String,
    _process: tokio::process::Child,
    _config: tempfile_path::Removed,
}

mod tempfile_path {
    /// A file removed when dropped.
    pub struct Removed(pub std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl Jaeger {
    pub async fn start() -> Self {
        let (otlp, query, query_grpc) = (
            super::process::free_port(),
            super::process::free_port(),
            super::process::free_port(),
        );
        let config = format!(
            r#"
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    # Jaeger would trace itself to localhost:4317, where nothing listens.
    traces:
      level: none
    logs:
      level: error
extensions:
  jaeger_query:
    storage:
      traces: memory
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memory:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memory
"#
        );
        let path = std::env::temp_dir().join(format!("portico-jaeger-{otlp}.yaml"));
        std::fs::write(&path, config).expect("the collector's configuration");
        let process = tokio::process::Command::new(super::tool("jaeger"))
            .arg("--config")
            .arg(format!("file:{}", path.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("jaeger starts");
        let jaeger = Self {
            otlp: format!("http://127.0.0.1:{otlp}"),
            query: format!("http://127.0.0.1:{query}"),
            _process: process,
            _config: tempfile_path::Removed(path),
        };
        let http = reqwest::Client::new();
        for _ in 0..600 {
            let services = http
                .get(format!("{}/api/services", jaeger.query))
                .send()
                .await;
            if services.is_ok_and(|r| r.status().is_success()) {
                return jaeger;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("jaeger's query API never answered on {}", jaeger.query);
    }

    /// The traces of `service` that `found` picks, once the collector has one (spans
    /// are sent in batches: asked again until then, for a minute at most).
    pub async fn until_trace(&self, service: &str, found: impl Fn(&Value) -> bool) -> Value {
        let http = reqwest::Client::new();
        let mut last = Value::Null;
        for _ in 0..600 {
            let answer = http
                .get(format!("{}/api/traces", self.query))
                .query(&[("service", service), ("limit", "200")])
                .send()
                .await;
            if let Ok(answer) = answer {
                last = answer.json().await.unwrap_or(Value::Null);
                if let Some(trace) = last["data"]
                    .as_array()
                    .and_then(|t| t.iter().find(|t| found(t)))
                {
                    return trace.clone();
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no such trace of {service}; the collector has: {last:#}");
    }
}
