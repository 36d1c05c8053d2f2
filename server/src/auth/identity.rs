//! Who is asking. In `local` mode everyone is the portal's own kubeconfig identity
//! (development). In `token` mode a user's bearer token, kept in an encrypted
//! cookie, is used for every API call. In `proxy` mode an authenticating proxy's
//! user and group headers become impersonation, but only on connections the proxy
//! made with its client certificate (`proxy_tls`).

use axum::http::{HeaderMap, HeaderName};

use crate::auth::proxy_tls::Peer;
use crate::auth::session::{Session, SessionKey};
use crate::kube::caller::{Caller, Token};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IdentityMode {
    Local,
    Token,
    /// Single sign-on with an OpenID Connect provider (`--oidc-*`).
    Oidc,
    Proxy,
}

/// How requests are identified.
pub struct IdentityConfig {
    pub mode: IdentityMode,
    pub user_header: HeaderName,
    pub groups_header: HeaderName,
    /// Proxy mode: user names the proxy may hand over start with one of these (empty:
    /// any name). Others are refused, so a misconfigured proxy cannot pass an
    /// administrator's name through.
    pub user_prefixes: Vec<String>,
    /// Proxy mode: groups not starting with one of these are dropped (empty: any).
    pub group_prefixes: Vec<String>,
    /// Token and single sign-on modes: the key sealing session cookies.
    pub sessions: Option<SessionKey>,
    /// Proxies in front whose `X-Forwarded-For` entries name the client (sign-in
    /// attempts are counted per client): 1 behind an Ingress, 0 when reached directly.
    pub forwarded_hops: usize,
}

fn allowed_by(prefixes: &[String], name: &str) -> bool {
    prefixes.is_empty() || prefixes.iter().any(|p| name.starts_with(p.as_str()))
}

impl IdentityConfig {
    pub fn local() -> Self {
        Self {
            mode: IdentityMode::Local,
            user_header: HeaderName::from_static("x-forwarded-user"),
            groups_header: HeaderName::from_static("x-forwarded-groups"),
            user_prefixes: vec![],
            group_prefixes: vec![],
            sessions: None,
            forwarded_hops: 0,
        }
    }

    /// The caller of a request from `peer` with `headers`; `None` when the request
    /// carries no identity this mode accepts.
    /// `cookie` names the session cookie (see [`cookie_name`]).
    pub fn identify(
        &self,
        peer: Option<&Peer>,
        headers: &HeaderMap,
        cookie: &str,
    ) -> Option<Caller> {
        self.identify_with_renewal(peer, headers, cookie)
            .map(|(caller, _)| caller)
    }

    /// As [`Self::identify`], with the fresh session cookie value a token-mode session
    /// in use is due (opened once for both).
    pub fn identify_with_renewal(
        &self,
        peer: Option<&Peer>,
        headers: &HeaderMap,
        cookie: &str,
    ) -> Option<(Caller, Option<String>)> {
        match self.mode {
            IdentityMode::Local => Some((Caller::Portal, None)),
            IdentityMode::Proxy => self.proxied(peer, headers).map(|c| (c, None)),
            IdentityMode::Token | IdentityMode::Oidc => {
                let session = self.session(headers, cookie)?;
                let renewal = self.sessions.as_ref()?.renewal(&session);
                let caller = Caller::Bearer {
                    name: session.user,
                    token: Token(session.token),
                };
                Some((caller, renewal))
            }
        }
    }

    /// Token mode: the live session the request's cookie (named `cookie`) carries.
    pub fn session(&self, headers: &HeaderMap, cookie: &str) -> Option<Session> {
        let cookie = cookie_value(headers, cookie)?;
        self.sessions.as_ref()?.open(&cookie)
    }

    /// Proxy mode: the user and groups in the headers, believed only on a connection
    /// the proxy authenticated with its client certificate.
    fn proxied(&self, peer: Option<&Peer>, headers: &HeaderMap) -> Option<Caller> {
        let addr = peer.map(|p| p.addr);
        if peer.and_then(|p| p.proxy.as_ref()).is_none() {
            if headers.contains_key(&self.user_header) {
                tracing::warn!(peer = ?addr, "identity headers without the proxy's client certificate ignored");
            }
            return None;
        }
        let mut users = headers.get_all(&self.user_header).iter();
        let name = users.next()?.to_str().ok()?.trim();
        if users.next().is_some() {
            // Which one would the proxy have meant? One was added on the way.
            tracing::warn!(peer = ?addr, "a request with two user headers refused");
            return None;
        }
        // Kubernetes' own identities are never a person behind a proxy.
        if name.is_empty() || name.starts_with("system:") {
            return None;
        }
        if !allowed_by(&self.user_prefixes, name) {
            tracing::warn!(peer = ?addr, user = name, "a user outside --proxy-user-prefixes refused");
            return None;
        }
        // One header may list groups separated by commas; a proxy that repeats
        // the header sends one group per header, and a comma is then part of
        // the group's name. Counted before unreadable values are dropped.
        let values: Vec<_> = headers.get_all(&self.groups_header).iter().collect();
        let repeated = values.len() > 1;
        let groups = values
            .into_iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| {
                if repeated {
                    vec![v]
                } else {
                    v.split(',').collect()
                }
            })
            .map(str::trim)
            .filter(|g| !g.is_empty() && !g.starts_with("system:"))
            .filter(|g| allowed_by(&self.group_prefixes, g))
            .map(str::to_string)
            .collect();
        Some(Caller::User {
            name: name.to_string(),
            groups,
        })
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

    const COOKIE: &str = "portico_session";

    fn proxy() -> IdentityConfig {
        IdentityConfig {
            mode: IdentityMode::Proxy,
            ..IdentityConfig::local()
        }
    }

    fn through_proxy() -> Peer {
        Peer {
            addr: "127.0.0.1:5000".parse().expect("addr"),
            proxy: Some("portico-proxy".into()),
            tls: false,
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    #[test]
    fn proxy_headers_count_only_on_connections_the_proxy_authenticated() {
        let h = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "dev, ops"),
            ("x-forwarded-groups", "qa"),
        ]);
        let peer = through_proxy();
        assert_eq!(
            proxy().identify(Some(&peer), &h, COOKIE),
            Some(Caller::User {
                name: "ada".into(),
                // Repeated headers: one group each, commas included.
                groups: vec!["dev, ops".into(), "qa".into()]
            })
        );
        let same_address_no_certificate = Peer {
            proxy: None,
            ..through_proxy()
        };
        assert_eq!(
            proxy().identify(Some(&same_address_no_certificate), &h, COOKIE),
            None,
            "forged by a peer without the proxy's certificate"
        );
        assert_eq!(proxy().identify(None, &h, COOKIE), None);
        assert_eq!(proxy().identify(Some(&peer), &headers(&[]), COOKIE), None);
        let escalating = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "system:masters,dev"),
        ]);
        assert_eq!(
            proxy().identify(Some(&peer), &escalating, COOKIE),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["dev".into()]
            }),
            "system groups are never taken from headers"
        );
        let as_system = headers(&[("x-forwarded-user", "system:admin")]);
        assert_eq!(proxy().identify(Some(&peer), &as_system, COOKIE), None);
    }

    #[test]
    fn two_user_headers_are_refused_and_repeated_group_headers_are_not_split() {
        let peer = through_proxy();
        let trusted = proxy();
        let smuggled = headers(&[("x-forwarded-user", "ada"), ("x-forwarded-user", "root")]);
        assert_eq!(trusted.identify(Some(&peer), &smuggled, COOKIE), None);

        let repeated = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "finance, emea"),
            ("x-forwarded-groups", "dev"),
        ]);
        assert_eq!(
            trusted.identify(Some(&peer), &repeated, COOKIE),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["finance, emea".into(), "dev".into()]
            })
        );
        // Repeated, even when one value is unreadable (and dropped): never split.
        let mut odd = headers(&[("x-forwarded-user", "ada"), ("x-forwarded-groups", "a,b")]);
        odd.append(
            HeaderName::from_static("x-forwarded-groups"),
            axum::http::HeaderValue::from_bytes(b"\xff").expect("opaque value"),
        );
        assert_eq!(
            trusted.identify(Some(&peer), &odd, COOKIE),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["a,b".into()]
            })
        );
        let listed = headers(&[("x-forwarded-user", "ada"), ("x-forwarded-groups", "a, b")]);
        assert_eq!(
            trusted.identify(Some(&peer), &listed, COOKIE),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["a".into(), "b".into()]
            })
        );
    }

    #[test]
    fn prefix_allow_lists_refuse_users_and_drop_groups_outside_them() {
        let narrowed = IdentityConfig {
            user_prefixes: vec!["oidc:".into()],
            group_prefixes: vec!["oidc:".into()],
            ..proxy()
        };
        let peer = through_proxy();
        let h = headers(&[
            ("x-forwarded-user", "oidc:ada"),
            ("x-forwarded-groups", "oidc:dev,cluster-admins"),
        ]);
        assert_eq!(
            narrowed.identify(Some(&peer), &h, COOKIE),
            Some(Caller::User {
                name: "oidc:ada".into(),
                groups: vec!["oidc:dev".into()]
            })
        );
        let outsider = headers(&[("x-forwarded-user", "admin")]);
        assert_eq!(narrowed.identify(Some(&peer), &outsider, COOKIE), None);
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
    fn no_two_users_share_a_feed_key_whatever_their_names() {
        let user = |name: &str, groups: &[&str]| Caller::User {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        };
        let lookalikes = [
            user("a:b", &["c"]),
            user("a", &["b:c"]),
            user("a", &["b", "c"]),
            user("a", &["b,c"]),
            user("a:b:c", &[]),
        ];
        let keys: std::collections::HashSet<_> =
            lookalikes.iter().map(Caller::feed_owner).collect();
        assert_eq!(keys.len(), lookalikes.len(), "{keys:?}");
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
