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
    // Colours only on a terminal: a log file or a pod's log reads them as noise, and
    // a search for `verb="sign-in"` would miss the line.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(env_filter)
        .with_ansi(ansi);
    match format {
        LogFormat::Json => builder.json().flatten_event(true).init(),
        LogFormat::Text => builder.init(),
    }
    if let Some(error) = bad_filter {
        tracing::warn!(%error, "invalid log filter; using `info`");
    }
}
