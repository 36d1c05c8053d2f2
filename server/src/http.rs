//! The axum router: SSR pages, server functions, health endpoints, static assets,
//! and the headers every response carries.

use app::{App, shell};
use axum::Router;
use axum::body::Body;
use std::net::SocketAddr;

use app::backend::SharedBackend;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use leptos::prelude::provide_context;
use leptos_axum::{LeptosRoutes, generate_route_list, handle_server_fns_with_context};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::TraceLayer;

use crate::identity::{Caller, IdentityMode};
use crate::state::AppState;
use crate::{csrf, health, login, watch};

/// Largest request body accepted (server-function arguments, manifests).
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// The CSP every page carries. Leptos' hydration bootstrap is an inline script and the
/// app is WebAssembly, hence 'unsafe-inline' and 'wasm-unsafe-eval' for scripts; all
/// else is same-origin only, and no page may be framed.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self' ws://127.0.0.1:3001 ws://localhost:3001; \
     frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'";

/// The backend acting as the request's caller (set by the identity middleware).
fn backend_for(
    state: &AppState,
    request: &Request<Body>,
) -> Result<SharedBackend, (StatusCode, &'static str)> {
    let caller = request
        .extensions()
        .get::<Caller>()
        .cloned()
        .ok_or((StatusCode::UNAUTHORIZED, "Sign in first."))?;
    state.backend_for(&caller).map_err(|e| {
        tracing::error!(error = %e, "cannot build a client for the caller");
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Portico cannot act for you right now.",
        )
    })
}

async fn server_fn_handler(State(state): State<AppState>, request: Request<Body>) -> Response {
    match backend_for(&state, &request) {
        Ok(backend) => {
            handle_server_fns_with_context(move || provide_context(backend.clone()), request)
                .await
                .into_response()
        }
        Err(refusal) => refusal.into_response(),
    }
}

/// Renders a page; its server functions run as the request's caller.
async fn page_handler(State(state): State<AppState>, request: Request<Body>) -> Response {
    let backend = match backend_for(&state, &request) {
        Ok(b) => b,
        Err(refusal) => return refusal.into_response(),
    };
    let options = state.leptos_options.clone();
    let render = leptos_axum::render_app_to_stream_with_context(
        {
            let options = options.clone();
            move || {
                provide_context(backend.clone());
                provide_context(options.clone());
            }
        },
        move || shell(options.clone()),
    );
    render(request).await.into_response()
}

/// Paths that need no identity: health, sign-in and the static site.
fn is_public(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/login" | "/favicon.ico")
        || path.starts_with("/auth/")
        || path.starts_with("/pkg/")
}

/// Works out who is asking and records it for the handlers; a request without an
/// identity the mode accepts is sent to sign in (pages) or refused (API).
async fn identify(
    State(state): State<AppState>,
    mut request: Request<Body>,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    match state.identity.identify(peer, request.headers()) {
        Some(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        None if is_public(request.uri().path()) => next.run(request).await,
        None if request.uri().path().starts_with("/api/") => (
            StatusCode::UNAUTHORIZED,
            "Portico does not know who you are: sign in, or reach it through the authenticating proxy.",
        )
            .into_response(),
        None if state.identity.mode == IdentityMode::Token => {
            Redirect::to("/login").into_response()
        }
        None => (
            StatusCode::UNAUTHORIZED,
            "Portico does not know who you are: reach it through the authenticating proxy.",
        )
            .into_response(),
    }
}

pub fn router(state: AppState) -> Router {
    let routes = generate_route_list(App);
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/login", get(login::page))
        .route("/auth/login", post(login::sign_in))
        .route("/auth/logout", post(login::sign_out))
        .route("/readyz", get(health::readyz))
        .route("/api/live/table", get(watch::sse::live_table))
        .route("/api/live/crds", get(watch::sse::live_crds))
        .route("/api/live/children", get(watch::children::live_children))
        .route(
            "/api/{*fn_name}",
            get(server_fn_handler).post(server_fn_handler),
        )
        .leptos_routes_with_handler(routes, get(page_handler))
        .fallback(leptos_axum::file_and_error_handler::<AppState, _>(shell))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            identify,
        ))
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
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}
