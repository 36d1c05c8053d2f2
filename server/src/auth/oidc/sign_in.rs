//! Single sign-on's pages: the sign-in page, the start of the authorization code flow
//! (state, nonce and PKCE verifier sealed into a short-lived cookie of their own), and
//! the provider's callback, which checks them, exchanges the code, asks the API server
//! who the ID token is, and starts the session.

use axum::Extension;
use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use serde::Deserialize;

use portico_core::base_path::BasePath;

use crate::auth::AuthState;
use crate::auth::identity::cookie_value;
use crate::auth::peer::Peer;
use crate::auth::session::{MAX_COOKIE_VALUE, SessionKey, now_secs};
use crate::auth::sign_in_page::{auth_page, escape};
use crate::auth::token_review::{Unreachable, who_is};

/// How long a sign-in may take at the provider.
const FLOW_LIFETIME: u64 = 600;

/// The flow cookie's name (see `session::cookie_name` for the prefixes).
fn flow_cookie_name(base: &BasePath) -> &'static str {
    if base.is_root() {
        "__Host-portico_sso"
    } else {
        "__Secure-portico_sso"
    }
}

/// SameSite=Lax, unlike the session's Strict: the callback is a navigation from the
/// provider's site, and must carry it.
fn flow_cookie(base: &BasePath, value: Option<&str>) -> Option<HeaderValue> {
    let path = if base.is_root() { "/" } else { base.as_str() };
    let name = flow_cookie_name(base);
    let text = match value {
        Some(v) => format!(
            "{name}={v}; Path={path}; HttpOnly; Secure; SameSite=Lax; Max-Age={FLOW_LIFETIME}"
        ),
        None => format!("{name}=; Path={path}; HttpOnly; Secure; SameSite=Lax; Max-Age=0"),
    };
    HeaderValue::from_str(&text).ok()
}

/// What the callback must match, and where the person was going.
struct Flow {
    started: u64,
    state: String,
    nonce: String,
    verifier: String,
    then: String,
}

impl Flow {
    fn seal(&self, keys: &SessionKey) -> Option<String> {
        keys.seal_text(&format!(
            "{}\n{}\n{}\n{}\n{}",
            self.started, self.state, self.nonce, self.verifier, self.then
        ))
    }

    fn open(keys: &SessionKey, cookie: &str) -> Option<Self> {
        let text = keys.open_text(cookie)?;
        let mut parts = text.splitn(5, '\n');
        let flow = Self {
            started: parts.next()?.parse().ok()?,
            state: parts.next()?.to_string(),
            nonce: parts.next()?.to_string(),
            verifier: parts.next()?.to_string(),
            then: parts.next()?.to_string(),
        };
        (now_secs().saturating_sub(flow.started) < FLOW_LIFETIME).then_some(flow)
    }
}

/// Compares digests, so the time taken says nothing about how much of the secret a
/// guess got right.
fn same_secret(a: &str, b: &str) -> bool {
    let digest = |s: &str| ring::digest::digest(&ring::digest::SHA256, s.as_bytes());
    digest(a).as_ref() == digest(b).as_ref()
}

/// Longest path kept to return to (the flow cookie must stay well under 4 KB).
const MAX_RETURN_PATH: usize = 1024;

/// A path inside Portico to return to: relative to the base path, never another site.
/// Control characters are refused too: a browser drops tabs and line breaks when it
/// reads a URL, so `/\t/evil.example` would become `//evil.example`.
pub(crate) fn local_path(then: Option<&str>) -> String {
    match then {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.contains('\\')
                && !p.chars().any(|c| c.is_control())
                && p.len() <= MAX_RETURN_PATH =>
        {
            p.to_string()
        }
        _ => "/".to_string(),
    }
}

/// `?then=`: where to go once signed in.
#[derive(Deserialize)]
pub struct Then {
    then: Option<String>,
}

impl Then {
    /// Where to go once signed in: a path inside Portico, `/` when none is safe.
    pub fn path(&self) -> String {
        local_path(self.then.as_deref())
    }
}

fn sign_in_body(base: &BasePath, issuer: &str, then: &str) -> String {
    let start = format!(
        "{}?then={}",
        base.url("/auth/start"),
        form_urlencoded::byte_serialize(then.as_bytes()).collect::<String>()
    );
    format!(
        r#"<p class="subtle">Portico signs you in with your organisation's identity provider and acts as you: what you may see and change is what Kubernetes allows you.</p>
<div class="form-actions"><a class="button primary" data-testid="sso-sign-in" href="{start}">Sign in with single sign-on</a></div>
<p class="subtle small">Provider: <code>{issuer}</code></p>"#,
        start = escape(&start),
        issuer = escape(issuer),
    )
}

/// `GET /login` in single sign-on mode.
pub async fn page(State(state): State<AuthState>, Query(query): Query<Then>) -> Response {
    let Some(provider) = &state.oidc else {
        return Redirect::to(&state.base.url("/")).into_response();
    };
    let then = local_path(query.then.as_deref());
    auth_page(
        &state,
        None,
        &sign_in_body(&state.base, provider.issuer(), &then),
    )
    .into_response()
}

/// The sign-in page again, with what went wrong (the provider's or Portico's words).
fn problem(state: &AuthState, status: StatusCode, sentence: &str) -> Response {
    let issuer = state.oidc.as_ref().map_or("", |p| p.issuer());
    let mut response = (
        status,
        auth_page(
            state,
            Some(sentence),
            &sign_in_body(&state.base, issuer, "/"),
        ),
    )
        .into_response();
    if let Some(clear) = flow_cookie(&state.base, None) {
        response.headers_mut().append(header::SET_COOKIE, clear);
    }
    response
}

/// Each step of a sign-in costs a request to the provider (and the callback one to
/// the API server): a client going at speed is refused, as token guesses are.
fn too_fast(state: &AuthState, peer: Option<&Peer>, headers: &HeaderMap) -> Option<Response> {
    let client = state.sign_ins.client(peer, headers);
    let limited = state.sign_ins.check(client, "").err()?;
    tracing::info!(target: "portico::audit", verb = "sign-in", via = "oidc", result = "rate-limited", ?limited, client = ?client, "audit");
    crate::portal_metrics::PORTAL.sign_in("oidc", "rate-limited");
    Some(problem(
        state,
        StatusCode::TOO_MANY_REQUESTS,
        "Too many sign-in attempts just now: wait a few seconds and try again.",
    ))
}

/// `GET /auth/start`: sends the browser to the provider.
pub async fn start(
    State(state): State<AuthState>,
    peer: Option<Extension<ConnectInfo<Peer>>>,
    headers: HeaderMap,
    Query(query): Query<Then>,
) -> Response {
    let (Some(provider), Some(keys)) = (&state.oidc, &state.identity.sessions) else {
        return Redirect::to(&state.base.url("/")).into_response();
    };
    if let Some(refused) = too_fast(&state, peer.as_ref().map(|p| &p.0.0), &headers) {
        return refused;
    }
    let begun = match provider.begin().await {
        Ok(begun) => begun,
        Err(error) => {
            tracing::warn!(%error, "single sign-on could not start");
            return problem(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                &format!("Portico cannot sign you in right now: {error}."),
            );
        }
    };
    let flow = Flow {
        started: now_secs(),
        state: begun.state,
        nonce: begun.nonce,
        verifier: begun.verifier,
        then: local_path(query.then.as_deref()),
    };
    let Some(cookie) = flow
        .seal(keys)
        .and_then(|v| flow_cookie(&state.base, Some(&v)))
    else {
        return problem(
            &state,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Portico could not start a sign-in.",
        );
    };
    let mut response = Redirect::to(&begun.url).into_response();
    response.headers_mut().append(header::SET_COOKIE, cookie);
    response
}

#[derive(Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// `GET /auth/callback`: the provider's answer.
pub async fn callback(
    State(state): State<AuthState>,
    peer: Option<Extension<ConnectInfo<Peer>>>,
    headers: HeaderMap,
    Query(answer): Query<Callback>,
) -> Response {
    let (Some(provider), Some(keys)) = (&state.oidc, &state.identity.sessions) else {
        return Redirect::to(&state.base.url("/")).into_response();
    };
    let flow =
        cookie_value(&headers, flow_cookie_name(&state.base)).and_then(|c| Flow::open(keys, &c));
    let matched = match (&flow, &answer.state) {
        (Some(flow), Some(got)) => same_secret(&flow.state, got),
        _ => false,
    };
    // The provider's own words only for a sign-in begun here: anyone can put an
    // `error_description` in a link.
    if let (Some(error), true) = (&answer.error, matched) {
        let said = answer.error_description.as_deref().unwrap_or(error);
        tracing::info!(target: "portico::audit", verb = "sign-in", result = "refused-by-provider", error, "audit");
        crate::portal_metrics::PORTAL.sign_in("oidc", "refused-by-provider");
        return problem(
            &state,
            StatusCode::UNAUTHORIZED,
            &format!("The identity provider did not sign you in: {said}"),
        );
    }
    let (Some(flow), Some(code), true) = (flow, answer.code, matched) else {
        tracing::info!(target: "portico::audit", verb = "sign-in", result = "stale-or-forged-callback", "audit");
        crate::portal_metrics::PORTAL.sign_in("oidc", "stale-or-forged-callback");
        return problem(
            &state,
            StatusCode::BAD_REQUEST,
            "This sign-in had expired or was not started here (or another tab started a newer one): sign in again.",
        );
    };
    if let Some(refused) = too_fast(&state, peer.as_ref().map(|p| &p.0.0), &headers) {
        return refused;
    }
    let tokens = match provider.finish(code, flow.verifier, flow.nonce).await {
        Ok(tokens) => tokens,
        Err(error) => {
            tracing::warn!(%error, "single sign-on: the code exchange failed");
            crate::portal_metrics::PORTAL.sign_in("oidc", "exchange-failed");
            return problem(&state, StatusCode::BAD_GATEWAY, &format!("{error}."));
        }
    };
    let user = match who_is(&state, &tokens.id_token).await {
        Ok(Some(user)) => user,
        Ok(None) => {
            tracing::warn!(
                issuer = provider.issuer(),
                "the API server refused the provider's ID token"
            );
            crate::portal_metrics::PORTAL.sign_in("oidc", "refused-by-api-server");
            return problem(
                &state,
                StatusCode::FORBIDDEN,
                &format!(
                    "The Kubernetes API server does not accept sign-ins from {}: its authentication \
                     configuration must trust this issuer for Portico's client ID, {} (docs/sso.md).",
                    provider.issuer(),
                    provider.client_id()
                ),
            );
        }
        Err(Unreachable) => {
            crate::portal_metrics::PORTAL.sign_in("oidc", "api-server-unreachable");
            return problem(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                "Portico could not reach the Kubernetes API server to finish signing you in: try again shortly.",
            );
        }
    };
    let Some((_, cookie)) = keys.start_with(user.clone(), tokens.id_token, Some(tokens.provider))
    else {
        return problem(
            &state,
            StatusCode::INTERNAL_SERVER_ERROR,
            "Portico could not start a session.",
        );
    };
    if cookie.len() > MAX_COOKIE_VALUE {
        return problem(
            &state,
            StatusCode::BAD_REQUEST,
            "The identity provider's token is too large to keep in a browser cookie (often: too many groups in it). Ask for a groups claim limited to the groups Kubernetes uses.",
        );
    }
    tracing::info!(target: "portico::audit", user = ?user, verb = "sign-in", via = "oidc", result = "ok", "audit");
    crate::portal_metrics::PORTAL.sign_in("oidc", "ok");
    // A page that moves on by itself rather than a redirect: the browser sends the
    // SameSite=Strict session cookie only on a navigation that starts on Portico's
    // own site, and this response answers one that started at the provider.
    let target = state.base.url(&flow.then);
    let mut response = Html(format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><meta http-equiv="refresh" content="0;url={target}"/><title>Signed in · Portico</title></head><body><p>Signed in. <a href="{target}">Continue</a></p></body></html>"#,
        target = escape(&target)
    ))
    .into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&state.cookie_header(Some(&cookie))) {
        headers.append(header::SET_COOKIE, value);
    }
    if let Some(clear) = flow_cookie(&state.base, None) {
        headers.append(header::SET_COOKIE, clear);
    }
    response
}

/// The page that sends the browser on to the provider's own sign-out (a redirect
/// would not do: it would answer a form's POST, which the page's form-action policy
/// keeps on Portico's origin).
pub fn provider_sign_out_page(url: &str) -> Response {
    Html(format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"/><meta http-equiv="refresh" content="0;url={url}"/><title>Signing out · Portico</title></head><body><p>Signed out of Portico. <a href="{url}">Sign out of the identity provider</a></p></body></html>"#,
        url = escape(url)
    ))
    .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_portico_are_returned_to() {
        assert_eq!(local_path(Some("/r/x/v1/y?ns=a")), "/r/x/v1/y?ns=a");
        for elsewhere in [
            "//evil.example/x",
            "https://evil.example/",
            "/\\evil.example",
            "crds",
        ] {
            assert_eq!(local_path(Some(elsewhere)), "/", "{elsewhere}");
        }
        assert_eq!(local_path(None), "/");
    }

    #[test]
    fn a_flow_opens_only_with_its_key_and_while_fresh() {
        let keys = SessionKey::random().expect("key");
        let flow = Flow {
            started: now_secs(),
            state: "s".into(),
            nonce: "n".into(),
            verifier: "v".into(),
            then: "/crds".into(),
        };
        let sealed = flow.seal(&keys).expect("sealed");
        let opened = Flow::open(&keys, &sealed).expect("opens");
        assert_eq!(
            (opened.state.as_str(), opened.then.as_str()),
            ("s", "/crds")
        );
        assert!(Flow::open(&SessionKey::random().expect("key"), &sealed).is_none());
        let stale = Flow {
            started: now_secs() - FLOW_LIFETIME,
            ..flow
        };
        assert!(Flow::open(&keys, &stale.seal(&keys).expect("sealed")).is_none());
    }
}
