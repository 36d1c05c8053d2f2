//! Token mode's sign-in: a page that takes a Kubernetes bearer token, checks it with
//! the API server (SelfSubjectReview: who is this?), and keeps it only in a sealed,
//! HttpOnly, Secure, SameSite=Strict cookie. The token never appears in a URL, a
//! page or a log line.

use axum::Extension;
use axum::Form;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::AuthState;
use super::oidc::sign_in::local_path;
use super::sign_in_page::{auth_page, escape};
use super::token_review::{Unreachable, who_is};
use crate::auth::identity::IdentityMode;
use crate::auth::peer::Peer;
use crate::auth::session::MAX_COOKIE_VALUE;

#[derive(Deserialize)]
pub struct SignIn {
    token: String,
    /// The page asked for before signing in (`?then=` of the sign-in page).
    #[serde(default)]
    then: Option<String>,
}

/// The token form; `then` (a path inside Portico) is where signing in leads.
fn page_html(state: &AuthState, then: &str, problem: Option<&str>) -> Html<String> {
    let base = &state.base;
    auth_page(
        state,
        problem,
        &format!(
            r#"<p class="subtle">Paste a Kubernetes bearer token. Portico acts with it, as you, and keeps it only in an encrypted cookie.</p>
<form method="post" action="{base}/auth/login" autocomplete="off">
<label class="field-label" for="token">Token</label>
<input id="token" name="token" type="password" required autofocus spellcheck="false"/>
<input type="hidden" name="then" value="{then}"/>
<div class="form-actions"><button type="submit" class="primary">Sign in</button></div>
</form>
<p class="subtle small">For a service account: <code>kubectl create token NAME -n NAMESPACE</code></p>"#,
            base = base.as_str(),
            then = escape(then),
        ),
    )
}

/// `GET /login`: the token form, or in single sign-on mode the provider's button.
pub async fn page(
    State(state): State<AuthState>,
    query: axum::extract::Query<crate::auth::oidc::sign_in::Then>,
) -> Response {
    match state.identity.mode {
        IdentityMode::Token => page_html(&state, &query.path(), None).into_response(),
        IdentityMode::Oidc => crate::auth::oidc::sign_in::page(State(state), query).await,
        _ => Redirect::to(&state.base.url("/")).into_response(),
    }
}

/// `POST /auth/login`: checks the token and starts a session.
pub async fn sign_in(
    State(state): State<AuthState>,
    peer: Option<Extension<ConnectInfo<Peer>>>,
    headers: axum::http::HeaderMap,
    Form(form): Form<SignIn>,
) -> Response {
    let (Some(sessions), IdentityMode::Token) = (&state.identity.sessions, state.identity.mode)
    else {
        return Redirect::to(&state.base.url("/")).into_response();
    };
    // Back to the page asked for, if it is Portico's own (never another site).
    let then = local_path(form.then.as_deref());
    let token = form.token.trim().to_string();
    if token.is_empty() {
        return (
            StatusCode::BAD_REQUEST,
            page_html(&state, &then, Some("Paste a token first.")),
        )
            .into_response();
    }
    // Each attempt costs a review at the API server: guessing at speed is refused,
    // per client and per claimed identity, so a flood locks out only itself.
    let client = state
        .sign_ins
        .client(peer.as_ref().map(|p| &p.0.0), &headers);
    if let Err(limited) = state.sign_ins.check(client, &token) {
        tracing::info!(target: "portico::audit", verb = "sign-in", result = "rate-limited", ?limited, client = ?client, "audit");
        crate::portal_metrics::PORTAL.sign_in("token", "rate-limited");
        return (
            StatusCode::TOO_MANY_REQUESTS,
            page_html(
                &state,
                &then,
                Some("Too many sign-in attempts just now: wait a few seconds and try again."),
            ),
        )
            .into_response();
    }
    let user = match who_is(&state, &token).await {
        Ok(user) => user,
        Err(Unreachable) => {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                page_html(&state, &then, Some("Portico could not reach the Kubernetes API server to check this token: try again shortly."),
                ),
            )
                .into_response();
        }
    };
    let Some(user) = user else {
        tracing::info!(target: "portico::audit", verb = "sign-in", result = "refused", "audit");
        crate::portal_metrics::PORTAL.sign_in("token", "refused");
        return (
            StatusCode::UNAUTHORIZED,
            page_html(
                &state,
                &then,
                Some("The API server did not accept this token."),
            ),
        )
            .into_response();
    };
    let Some((_, cookie)) = sessions.start(user.clone(), token) else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            page_html(&state, &then, Some("Portico could not start a session.")),
        )
            .into_response();
    };
    if cookie.len() > MAX_COOKIE_VALUE {
        return (
            StatusCode::BAD_REQUEST,
            page_html(&state, &then, Some(
                "This token is too long to keep in a browser cookie; use a shorter-lived or service-account token.",
            )),
        )
            .into_response();
    }
    tracing::info!(target: "portico::audit", user = ?user, verb = "sign-in", result = "ok", "audit");
    crate::portal_metrics::PORTAL.sign_in("token", "ok");
    let mut response = Redirect::to(&state.base.url(&then)).into_response();
    if let Ok(value) = HeaderValue::from_str(&state.cookie_header(Some(&cookie))) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `POST /auth/logout`: ends the session: its cookie, and any copy of it, stops
/// opening (its live sockets close), and the browser is told to forget it. After
/// single sign-on the browser goes on to the provider's own sign-out, when the
/// provider offers one.
pub async fn sign_out(State(state): State<AuthState>, headers: axum::http::HeaderMap) -> Response {
    let mut provider_sign_out = None;
    if let (Some(sessions), Some(session)) = (&state.identity.sessions, state.session(&headers)) {
        sessions.sign_out(&session);
        tracing::info!(target: "portico::audit", user = ?session.user, verb = "sign-out", result = "ok", "audit");
        if let (Some(provider), Some(_)) = (&state.oidc, &session.provider) {
            provider_sign_out = provider.sign_out_url(&session.token).await;
        }
    }
    let mut response = match provider_sign_out {
        Some(url) => crate::auth::oidc::sign_in::provider_sign_out_page(&url),
        None => Redirect::to(&state.base.url("/login")).into_response(),
    };
    if let Ok(value) = HeaderValue::from_str(&state.cookie_header(None)) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}
