//! `/healthz` (the process is alive) and `/readyz` (it can serve: the kinds have been
//! read and the CRD watch is receiving). Both are public, so neither asks the API
//! server anything: a flood of probes costs the cluster nothing.

use axum::extract::State;
use axum::http::StatusCode;

use crate::web::state::AppState;

pub async fn healthz() -> &'static str {
    "ok"
}

pub async fn readyz(State(state): State<AppState>) -> (StatusCode, &'static str) {
    if !state.kinds.is_loaded() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "CRD catalog not loaded yet",
        )
    } else if !state.kinds.is_current() {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "the watch on the API server is interrupted",
        )
    } else {
        (StatusCode::OK, "ok")
    }
}
