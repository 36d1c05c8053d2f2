//! The axum router: SSR pages, server functions, health endpoints, static assets,
//! and the headers every response carries.

use app::{App, shell};
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::IntoResponse;
use axum::routing::get;
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list, handle_server_fns_with_context};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

use crate::state::AppState;
use crate::{csrf, health, watch};

/// Largest request body accepted (server-function arguments, manifests).
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

async fn server_fn_handler(
    State(state): State<AppState>,
    request: Request<Body>,
) -> impl IntoResponse {
    let backend = state.backend.clone();
    handle_server_fns_with_context(move || provide_context(backend.clone()), request).await
}

pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    let backend = state.backend.clone();
    let options = state.leptos_options.clone();
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/api/live/table", get(watch::sse::live_table))
        .route("/api/live/crds", get(watch::sse::live_crds))
        .route("/api/live/children", get(watch::children::live_children))
        .route(
            "/api/{*fn_name}",
            get(server_fn_handler).post(server_fn_handler),
        )
        .leptos_routes_with_context(
            &state,
            routes,
            move || provide_context(backend.clone()),
            move || shell(options.clone()),
        )
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn(csrf::guard))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
