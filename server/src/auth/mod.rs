//! Who is asking, and what they may do: identity modes (local, token, proxy), sealed
//! session cookies and sign-in, the authenticating proxy's TLS, the CSRF guard, and
//! access reviews made as the caller. Uses `kube` only.

pub mod access;
pub(crate) mod csrf;
pub mod host;
pub mod identity;
pub(crate) mod login;
pub mod proxy_tls;
pub mod session;
pub mod sign_in_limit;

use std::sync::Arc;

use app::base::BasePath;
use axum::http::HeaderMap;

use crate::kube::caller::Caller;
use crate::kube::pool::ClientPool;
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
        }
    }

    /// Who is asking, with the fresh session cookie a session in use is due.
    pub fn identify_with_renewal(
        &self,
        peer: Option<&proxy_tls::Peer>,
        headers: &HeaderMap,
    ) -> Option<(Caller, Option<String>)> {
        let cookie = session::cookie_name(&self.base);
        self.identity.identify_with_renewal(peer, headers, cookie)
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
