//! `/healthz` (the process is alive) and `/readyz` (it can serve: the API server
//! answers and the CRD catalog has loaded).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;

use crate::web::state::AppState;

pub async fn healthz() -> &'static str {
    "ok"
}

pub async fn readyz(State(state): State<AppState>) -> (StatusCode, String) {
    if !state.kinds.is_loaded() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "CRD catalog not loaded yet".into(),
        );
    }
    match tokio::time::timeout(Duration::from_secs(2), state.client.apiserver_version()).await {
        Ok(Ok(_)) => (StatusCode::OK, "ok".into()),
        Ok(Err(error)) => {
            tracing::warn!(%error, "readiness: API server unreachable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "API server unreachable".into(),
            )
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "API server did not answer within 2s".into(),
        ),
    }
}
