//! Who is asking, and what they may do: identity modes (local, token, proxy), sealed
//! session cookies and sign-in, the authenticating proxy's TLS, the CSRF guard, and
//! access reviews made as the caller. Uses `kube` only.

pub mod access;
pub(crate) mod csrf;
pub mod identity;
pub(crate) mod login;
pub mod proxy_tls;
pub mod session;

use std::num::NonZeroU32;
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
    /// Sign-in attempts, everyone together (each costs the API server a review).
    pub sign_ins: Arc<governor::DefaultDirectRateLimiter>,
    /// The path Portico is served under: the session cookie's scope and name.
    pub base: BasePath,
}

/// Sign-in attempts accepted per second in the long run, and in a burst: plenty for
/// people arriving at nine, far too few to guess tokens.
const SIGN_INS_PER_SECOND: NonZeroU32 = nonzero(5);
const SIGN_IN_BURST: NonZeroU32 = nonzero(20);

const fn nonzero(n: u32) -> NonZeroU32 {
    match NonZeroU32::new(n) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    }
}

impl AuthState {
    /// People identified as `identity` says, acted for through `pool`.
    pub fn new(identity: IdentityConfig, pool: ClientPool) -> Self {
        let pool = Arc::new(pool);
        Self {
            identity: Arc::new(identity),
            reviews: Arc::new(AccessReviews::new(pool.clone())),
            pool,
            sign_ins: Arc::new(governor::RateLimiter::direct(
                governor::Quota::per_second(SIGN_INS_PER_SECOND).allow_burst(SIGN_IN_BURST),
            )),
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
