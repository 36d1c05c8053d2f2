//! The axum router: SSR pages, server functions, health endpoints, static assets,
//! and the headers every response carries.

use app::shell;
use axum::Router;
use axum::body::Body;

use app::backend::{BackendError, SharedBackend};
use axum::extract::{OriginalUri, Request, State};

use crate::auth::peer::{Peer, PeerListener};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use leptos::prelude::provide_context;
use leptos_axum::handle_server_fns_with_context;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};

use super::state::AppState;
use super::{assets, health};
use crate::auth::identity::IdentityMode;
use crate::auth::oidc::sign_in as sso;
use crate::auth::{Identified, RenewAt, csrf, login};
use crate::cluster::caller::Caller;
use crate::live;

/// Largest request body accepted (server-function arguments, manifests).
const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Where a debug build may also connect: `cargo leptos watch`'s reload socket. A
/// release build (what ships) allows no other origin.
const DEV_RELOAD_SOCKET: &str = if cfg!(debug_assertions) {
    " ws://127.0.0.1:3001 ws://localhost:3001"
} else {
    ""
};

/// The Content-Security-Policy. Pages allow their own inline scripts (Leptos'
/// hydration bootstrap) by a per-response nonce; everything else allows no inline
/// script at all. WebAssembly needs 'wasm-unsafe-eval'; all else is same-origin only,
/// and nothing may frame Portico.
fn content_security_policy(nonce: Option<&str>) -> String {
    let inline = nonce.map(|n| format!(" 'nonce-{n}'")).unwrap_or_default();
    format!(
        "default-src 'self'; script-src 'self'{inline} 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
         connect-src 'self'{DEV_RELOAD_SOCKET}; \
         frame-ancestors 'none'; base-uri 'self'; form-action 'self'; object-src 'none'"
    )
}

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
    let backend = match backend_for(&state, &request) {
        Ok(backend) => backend,
        Err(refusal) => return refusal.into_response(),
    };
    let request = match read_whole_body(request).await {
        Ok(request) => request,
        Err(too_large) => return too_large,
    };
    let base = state.base.clone();
    let response = handle_server_fns_with_context(
        move || {
            provide_context(backend.clone());
            app::base::provide(base.clone());
        },
        request,
    )
    .await
    .into_response();
    errors_get_their_status(response).await
}

/// The request with its body read whole, or a 413 when it is over [`MAX_BODY_BYTES`].
/// Server functions read bodies themselves and would report an oversized one as their
/// own failure (500); reading it here first gives the client the right answer.
async fn read_whole_body(request: Request<Body>) -> Result<Request<Body>, Response> {
    let (parts, body) = request.into_parts();
    match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => Ok(Request::from_parts(parts, Body::from(bytes))),
        // Over the limit, or the client broke off mid-body (and reads no answer).
        Err(_) => Err((
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "The request body is larger than Portico accepts ({} MiB).",
                MAX_BODY_BYTES / (1024 * 1024)
            ),
        )
            .into_response()),
    }
}

/// Leptos answers every server-function failure with 500. Portico's are typed
/// ([`BackendError`], as JSON): the answer gets the status that names the failure
/// (400 for arguments that did not decode, 404, 403, 409, …), body unchanged.
async fn errors_get_their_status(response: Response) -> Response {
    const ERROR_HEADER: &str = leptos::server_fn::error::SERVER_FN_ERROR_HEADER;
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR
        || !response.headers().contains_key(ERROR_HEADER)
    {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        parts.headers.remove(header::CONTENT_LENGTH);
        return (parts, "Portico could not finish this answer.").into_response();
    };
    if let Ok(error) = serde_json::from_slice::<BackendError>(&bytes)
        && let Ok(status) = StatusCode::from_u16(error.status())
    {
        parts.status = status;
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Renders a page; its server functions run as the request's caller.
async fn page_handler(State(state): State<AppState>, mut request: Request<Body>) -> Response {
    // Under a base path the router sees the full path, as the browser does.
    if let Some(original) = request.extensions().get::<OriginalUri>().cloned() {
        *request.uri_mut() = original.0;
    }
    let backend = match backend_for(&state, &request) {
        Ok(b) => b,
        Err(refusal) => return refusal.into_response(),
    };
    // What the page keeps in the browser is kept per person (app::browser_store).
    let kept_for = request
        .extensions()
        .get::<Caller>()
        .and_then(Caller::user_name)
        .unwrap_or_default()
        .to_string();
    let options = state.leptos_options.clone();
    let base = state.base.clone();
    let nonce = leptos::nonce::Nonce::new();
    let policy = content_security_policy(Some(&nonce));
    let render = leptos_axum::render_app_to_stream_with_context(
        {
            let options = options.clone();
            move || {
                provide_context(backend.clone());
                provide_context(options.clone());
                provide_context(app::browser_store::KeptFor(kept_for.clone()));
                app::base::provide(base.clone());
                // Overrides the one leptos_axum provides, so the header can name it.
                provide_context(nonce.clone());
            }
        },
        move || shell(options.clone()),
    );
    let mut response = render(request).await.into_response();
    if let Ok(value) = HeaderValue::from_str(&policy) {
        response
            .headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, value);
    }
    response
}

/// Paths that need no identity: health, sign-in and the static site.
fn is_public(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/login" | "/favicon.ico")
        || path.starts_with("/auth/")
        || path.starts_with("/pkg/")
        || path.starts_with("/xterm/")
}

/// Works out who is asking and records it for the handlers; a request without an
/// identity the mode accepts is sent to sign in (pages) or refused (API).
async fn identify(
    State(state): State<AppState>,
    mut request: Request<Body>,
    next: Next,
) -> Response {
    let identified = state.auth.identify(request.headers()).await;
    match identified {
        // A session in use gets a fresh cookie now and then, so only idle ones end.
        Some(Identified {
            caller,
            cookie,
            renew_at,
        }) => {
            tracing::Span::current().record("caller", caller.name());
            request.extensions_mut().insert(caller);
            if let Some(at) = renew_at {
                request.extensions_mut().insert(RenewAt(at));
            }
            let mut response = next.run(request).await;
            // Sign-in and sign-out set the session cookie themselves; a renewal must not
            // undo that (other cookies, such as sign-in's own, do not count).
            let session_cookie = format!("{}=", crate::auth::session::cookie_name(&state.base));
            if let Some(cookie) = cookie
                && !response
                    .headers()
                    .get_all(header::SET_COOKIE)
                    .iter()
                    .any(|v| v.as_bytes().starts_with(session_cookie.as_bytes()))
                && let Ok(value) = HeaderValue::from_str(&state.auth.cookie_header(Some(&cookie)))
            {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
            response
        }
        None if is_public(request.uri().path()) => next.run(request).await,
        None if request.uri().path().starts_with("/api/") => (
            StatusCode::UNAUTHORIZED,
            "Portico does not know who you are: sign in first.",
        )
            .into_response(),
        // Signing in (single sign-on or a token) comes back to the page asked for.
        None if matches!(
            state.auth.identity.mode,
            IdentityMode::Oidc | IdentityMode::Token
        ) =>
        {
            let asked = request
                .extensions()
                .get::<OriginalUri>()
                .map_or_else(|| request.uri().clone(), |o| o.0.clone());
            let within = asked
                .path_and_query()
                .map_or("/", |p| p.as_str())
                .strip_prefix(state.base.as_str())
                .unwrap_or("/");
            let then: String = form_urlencoded::byte_serialize(within.as_bytes()).collect();
            Redirect::to(&format!("{}?then={then}", state.base.url("/login"))).into_response()
        }
        // Local mode identifies every request.
        None => Redirect::to(&state.base.url("/login")).into_response(),
    }
}

/// HSTS for a year on answers that went out over HTTPS, as the Ingress says
/// (`X-Forwarded-Proto`, believed only behind the configured proxies; Portico itself
/// serves plain HTTP). Not for subdomains: other applications on them are not
/// Portico's to bind.
async fn strict_transport(
    State(state): State<AppState>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let ingress_tls = state.auth.identity.forwarded_hops > 0
        && request
            .headers()
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .is_some_and(|proto| proto.trim().eq_ignore_ascii_case("https"));
    let mut response = next.run(request).await;
    if ingress_tls {
        response.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=31536000"),
        );
    }
    response
}

/// Static files (the wasm bundle, CSS, xterm.js, top-level assets) or else a page.
async fn static_or_page(State(state): State<AppState>, request: Request<Body>) -> Response {
    let path = request.uri().path();
    let top_level_file = path.matches('/').count() == 1 && path.contains('.');
    if path.starts_with("/pkg/") || path.starts_with("/xterm/") || top_level_file {
        return state.assets.serve(request).await;
    }
    page_handler(State(state), request).await
}

/// Portico's routes, served at the root or under the state's base path
/// (`--base-path`), with the health checks always at the root too (kubelet probes the
/// pod directly).
pub fn router(state: AppState) -> Router {
    // Rendering spawns tasks on Leptos' executor; any error just means it is set.
    let _ = any_spawner::Executor::init_tokio();
    let base = state.base.clone();
    let state_hosts = state.hosts.clone();
    // Under a base path, the home page is the base itself: the site's root and the
    // base with a slash lead there (a streamed render cannot set a redirect's status).
    let start_page = base.as_str().to_string();
    let home = move || {
        let start_page = start_page.clone();
        async move { Redirect::to(&start_page) }
    };
    let portico = Router::new()
        .route("/healthz", get(health::healthz))
        .route("/login", get(login::page))
        .route("/auth/login", post(login::sign_in))
        .route("/auth/logout", post(login::sign_out))
        .route("/auth/start", get(sso::start))
        .route("/auth/callback", get(sso::callback))
        .route("/readyz", get(health::readyz))
        .route("/api/live/table", get(live::transports::sse::live_table))
        .route("/api/live/crds", get(live::transports::sse::live_crds))
        .route(
            "/api/live/children",
            get(live::transports::sse::live_children),
        )
        .route("/api/live", get(live::transports::socket::live_socket))
        .route("/api/exec", get(crate::exec::route::terminal_socket))
        // axum's Sse answers `no-cache` (revalidate, but keep); a stream of someone's
        // cluster view must not be kept at all. Applies to the routes above.
        .route_layer(SetResponseHeaderLayer::overriding(
            header::CACHE_CONTROL,
            HeaderValue::from_static(assets::NO_STORE),
        ))
        .route(
            "/api/{*fn_name}",
            get(server_fn_handler).post(server_fn_handler),
        )
        .fallback(static_or_page)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            identify,
        ))
        .layer(axum::middleware::from_fn(csrf::guard))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone());
    let site = if base.is_root() {
        portico
    } else {
        // axum's nest serves `/portico` and `/portico/...` but not `/portico/`.
        Router::new()
            .route("/healthz", get(health::healthz))
            .route("/readyz", get(health::readyz).with_state(state.clone()))
            .route("/", get(home.clone()))
            .route(&base.url("/"), get(home))
            .nest(base.as_str(), portico)
    };
    site.layer(SetResponseHeaderLayer::overriding(
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
    .layer(SetResponseHeaderLayer::if_not_present(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(&content_security_policy(None))
            .unwrap_or_else(|_| HeaderValue::from_static("default-src 'self'")),
    ))
    .layer(SetResponseHeaderLayer::overriding(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    ))
    // Pages, server functions and streams show one person's view of the cluster: no
    // cache may keep them. Site files set their own policy (see `assets`).
    .layer(SetResponseHeaderLayer::if_not_present(
        header::CACHE_CONTROL,
        HeaderValue::from_static(assets::NO_STORE),
    ))
    // Outside everything else, health checks and site files included: a rebinding page
    // gets nothing from Portico, not even its script.
    .layer(axum::middleware::from_fn_with_state(
        state.clone(),
        strict_transport,
    ))
    .layer(axum::middleware::from_fn_with_state(
        state_hosts,
        crate::auth::host::guard,
    ))
    // Outside the guards: a request they refuse is counted too.
    .layer(axum::middleware::from_fn_with_state(
        base,
        super::metrics_route::count_requests,
    ))
    .layer(
        TraceLayer::new_for_http()
            .make_span_with(request_span)
            .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
    )
    // A random id (UUID v4) for requests that arrive without one: unique across
    // replicas and restarts, where a counter repeated. Sent back, so a person can quote it.
    .layer(PropagateRequestIdLayer::x_request_id())
    .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// The span every request runs in: its id (the Ingress' `X-Request-ID` when it sent
/// one), method and path (never the query), and the caller once identified; in the
/// trace the request's `traceparent` names, if any.
fn request_span(request: &Request<Body>) -> tracing::Span {
    let id = request
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let span = tracing::info_span!(
        "request",
        id,
        method = %request.method(),
        path = request.uri().path(),
        caller = tracing::field::Empty,
        otel.kind = "server",
        otel.name = format!(
            "{} {}",
            request.method(),
            crate::portal_metrics::route_of(request.uri().path())
        ),
    );
    // A trace the Ingress (or a browser's instrumentation) started goes on here.
    let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract(&opentelemetry_http::HeaderExtractor(request.headers()))
    });
    let _ = tracing_opentelemetry::OpenTelemetrySpanExt::set_parent(&span, parent);
    span
}

/// Serves `router` on `listener` (plain HTTP, with each connection's [`Peer`]) until
/// `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router.into_make_service_with_connect_info::<Peer>();
    axum::serve(PeerListener(listener), app)
        .with_graceful_shutdown(shutdown)
        .await
}
