//! Who is asking, and what they may do: identity modes (local, token, single sign-on),
//! sealed session cookies and sign-in, the connection's peer, the CSRF guard, and
//! access reviews made as the caller. Uses `kube` only.

pub mod access;
pub(crate) mod csrf;
pub mod host;
pub mod identity;
pub(crate) mod login;
pub mod oidc;
pub mod peer;
pub mod rules;
pub mod session;
pub mod sign_in_limit;
pub(crate) mod sign_in_page;
pub(crate) mod token_review;

use std::sync::Arc;

use axum::http::HeaderMap;
use portico_core::base_path::BasePath;

use crate::cluster::caller::Caller;
use crate::cluster::pool::ClientPool;
use access::AccessReviews;
use identity::IdentityConfig;

/// What sign-in and identification need: how people are identified, a client per
/// caller, access reviews made as them, and the sign-in rate limit.
#[derive(Clone)]
pub struct AuthState {
    pub identity: Arc<IdentityConfig>,
    pub pool: Arc<ClientPool>,
    pub reviews: Arc<AccessReviews>,
    /// Sign-in attempts per client and per claimed identity.
    pub sign_ins: Arc<sign_in_limit::SignInLimits>,
    /// The path Portico is served under: the session cookie's scope and name.
    pub base: BasePath,
    /// The site's stylesheet, for the sign-in pages (content-named in a release).
    pub stylesheet: String,
    /// Single sign-on's provider (`--identity oidc`).
    pub oidc: Option<Arc<oidc::OidcProvider>>,
    /// ID token renewals under way or just done.
    pub refreshes: Arc<oidc::refresh::Refreshes>,
}

/// Single sign-on: when the request's ID token is due for renewal (seconds since the
/// epoch), recorded for the handlers beside the [`Caller`].
#[derive(Debug, Clone, Copy)]
pub struct RenewAt(pub u64);

/// Who is asking, as the identity middleware found out.
pub struct Identified {
    pub caller: Caller,
    /// A fresh session cookie value due to the browser (renewed, or a new ID token).
    pub cookie: Option<String>,
    /// Single sign-on: when the caller's ID token is due for renewal (seconds since
    /// the epoch). A live socket closes then, and the page's reconnection renews it.
    pub renew_at: Option<u64>,
}

impl AuthState {
    /// People identified as `identity` says, acted for through `pool`.
    pub fn new(identity: IdentityConfig, pool: ClientPool) -> Self {
        let pool = Arc::new(pool);
        let sign_ins = Arc::new(sign_in_limit::SignInLimits::new(identity.forwarded_hops));
        Self {
            identity: Arc::new(identity),
            reviews: Arc::new(AccessReviews::new(pool.clone())),
            pool,
            sign_ins,
            base: BasePath::default(),
            stylesheet: "/pkg/portico.css".into(),
            oidc: None,
            refreshes: Arc::default(),
        }
    }

    /// Who is asking. A single sign-on session whose ID token is due is renewed first
    /// (once, however many requests ask at the same moment); one that cannot be renewed
    /// goes on with its token until it expires, and then needs a new sign-in.
    pub async fn identify(&self, headers: &HeaderMap) -> Option<Identified> {
        let now = session::now_secs();
        if let Some(provider) = &self.oidc {
            let session = self.session(headers)?;
            // A pasted token's session (sealed with the same key in token mode) is
            // not a single sign-on one: it would never expire here.
            session.provider.as_ref()?;
            if !session.due_for_refresh(now) {
                // The cookie opened once: its renewal and the caller come from it.
                let cookie = self.identity.sessions.as_ref()?.renewal(&session);
                let renew_at = session.provider.as_ref().map(|p| p.refresh_at);
                return Some(Identified {
                    caller: session.into_caller(),
                    cookie,
                    renew_at,
                });
            }
            let (session, cookie, renew_at) = match self
                .refreshes
                .renewed(provider, &self.identity, &session)
                .await
            {
                Some((renewed, cookie)) => {
                    let at = renewed.provider.as_ref().map(|p| p.refresh_at);
                    (renewed, Some(cookie), at)
                }
                // Not renewed this time: the token serves until it expires.
                None if !session.token_expired(now) => {
                    let at = session.provider.as_ref().map(|p| p.expires);
                    (session, None, at)
                }
                None => return None,
            };
            return Some(Identified {
                caller: session.into_caller(),
                cookie,
                renew_at,
            });
        }
        let (caller, cookie) = self.identify_with_renewal(headers)?;
        Some(Identified {
            caller,
            cookie,
            renew_at: None,
        })
    }

    /// Who is asking, with the fresh session cookie a session in use is due.
    pub fn identify_with_renewal(&self, headers: &HeaderMap) -> Option<(Caller, Option<String>)> {
        let cookie = session::cookie_name(&self.base);
        self.identity.identify_with_renewal(headers, cookie)
    }

    /// Ends the session the request's cookie carries, because the API server no longer
    /// accepts its token (a deleted ServiceAccount, a revoked token): its cookie stops
    /// opening, and every live view it holds closes.
    pub fn end_refused_session(&self, headers: &HeaderMap) {
        if let (Some(sessions), Some(session)) = (&self.identity.sessions, self.session(headers)) {
            sessions.sign_out(&session);
            tracing::info!(target: "portico::audit", user = ?session.user, verb = "sign-out", result = "the API server refused the token", "audit");
        }
    }

    /// Token mode: the live session the request's cookie carries.
    pub fn session(&self, headers: &HeaderMap) -> Option<session::Session> {
        self.identity
            .session(headers, session::cookie_name(&self.base))
    }

    /// The Set-Cookie value storing `value` (or, with `None`, clearing the cookie).
    pub fn cookie_header(&self, value: Option<&str>) -> String {
        session::cookie_header(&self.base, value)
    }
}
