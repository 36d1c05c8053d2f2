//! Structured logs through `tracing`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. An invalid filter falls back to `info` rather than
/// refusing to start, and says so.
pub fn init(filter: &str, format: LogFormat) {
    let (env_filter, bad_filter) = match EnvFilter::try_new(filter) {
        Ok(f) => (f, None),
        Err(e) => (EnvFilter::new("info"), Some(e.to_string())),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(env_filter);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
    if let Some(error) = bad_filter {
        tracing::warn!(%error, "invalid log filter; using `info`");
    }
}
