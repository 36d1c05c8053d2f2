//! Who is asking. In `local` mode everyone is the portal's own kubeconfig identity
//! (development). In `token` and `oidc` (single sign-on) modes a person's bearer
//! token, kept in an encrypted cookie, is used for every API call, and the API server
//! verifies it. No mode believes identity headers or impersonates anyone.

use axum::http::HeaderMap;

use crate::auth::session::{Session, SessionKey};
use crate::cluster::caller::Caller;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IdentityMode {
    Local,
    Token,
    /// Single sign-on with an OpenID Connect provider (`--oidc-*`).
    Oidc,
}

/// How requests are identified.
pub struct IdentityConfig {
    pub mode: IdentityMode,
    /// Token and single sign-on modes: the key sealing session cookies.
    pub sessions: Option<SessionKey>,
    /// Proxies in front whose `X-Forwarded-For` entries name the client (sign-in
    /// attempts are counted per client): 1 behind an Ingress, 0 when reached directly.
    pub forwarded_hops: usize,
}

impl IdentityConfig {
    pub fn local() -> Self {
        Self {
            mode: IdentityMode::Local,
            sessions: None,
            forwarded_hops: 0,
        }
    }

    /// The caller of a request with `headers`, with the fresh session cookie value a
    /// session in use is due (opened once for both); `None` when the request carries
    /// no identity this mode accepts. `cookie` names the session cookie (see
    /// [`cookie_name`](crate::auth::session::cookie_name)).
    pub fn identify_with_renewal(
        &self,
        headers: &HeaderMap,
        cookie: &str,
    ) -> Option<(Caller, Option<String>)> {
        match self.mode {
            IdentityMode::Local => Some((Caller::Portal, None)),
            IdentityMode::Token | IdentityMode::Oidc => {
                let session = self.session(headers, cookie)?;
                let renewal = self.sessions.as_ref()?.renewal(&session);
                Some((session.into_caller(), renewal))
            }
        }
    }

    /// Token and single sign-on modes: the live session the request's cookie (named
    /// `cookie`) carries.
    pub fn session(&self, headers: &HeaderMap, cookie: &str) -> Option<Session> {
        let cookie = cookie_value(headers, cookie)?;
        self.sessions.as_ref()?.open(&cookie)
    }
}

/// A cookie's value from the request's Cookie headers.
pub fn cookie_value(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::caller::Token;

    const COOKIE: &str = "portico_session";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    #[test]
    fn identity_headers_name_no_one_in_any_mode() {
        let forged = headers(&[
            ("x-forwarded-user", "admin"),
            ("x-forwarded-groups", "system:masters"),
            ("x-remote-user", "admin"),
        ]);
        for mode in [IdentityMode::Token, IdentityMode::Oidc] {
            let config = IdentityConfig {
                mode,
                sessions: Some(SessionKey::random().expect("key")),
                ..IdentityConfig::local()
            };
            assert_eq!(
                config.identify_with_renewal(&forged, COOKIE),
                None,
                "{mode:?}"
            );
        }
        assert_eq!(
            IdentityConfig::local().identify_with_renewal(&forged, COOKIE),
            Some((Caller::Portal, None)),
            "local mode is the portal's own identity, whatever the headers say"
        );
    }

    #[test]
    fn a_sealed_session_is_the_person_with_their_own_token() {
        let keys = SessionKey::random().expect("key");
        let (_, sealed) = keys
            .start("ada".into(), "s3cr3t".into())
            .expect("a session");
        let config = IdentityConfig {
            mode: IdentityMode::Token,
            sessions: Some(keys),
            ..IdentityConfig::local()
        };
        let cookie = format!("{COOKIE}={sealed}");
        let (caller, _) = config
            .identify_with_renewal(&headers(&[("cookie", &cookie)]), COOKIE)
            .expect("identified");
        assert_eq!(
            caller,
            Caller::Bearer {
                name: "ada".into(),
                token: Token("s3cr3t".into())
            }
        );
    }

    #[test]
    fn feeds_are_keyed_by_credentials_never_by_the_token_itself() {
        let ada = |t: &str| Caller::Bearer {
            name: "ada".into(),
            token: Token(t.into()),
        };
        let owner = ada("s3cr3t").feed_owner().expect("owner");
        assert!(!owner.contains("s3cr3t"));
        assert_ne!(
            Some(owner),
            ada("renewed").feed_owner(),
            "a new token, a new feed"
        );
        assert_eq!(Caller::Portal.feed_owner(), None);
    }

    #[test]
    fn tokens_never_print() {
        let caller = Caller::Bearer {
            name: "ada".into(),
            token: Token("s3cr3t".into()),
        };
        assert!(!format!("{caller:?}").contains("s3cr3t"));
    }
}
