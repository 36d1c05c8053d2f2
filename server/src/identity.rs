//! Who is asking. In `local` mode everyone is the portal's own kubeconfig identity
//! (development). In `token` mode a user's bearer token, kept in an encrypted
//! cookie, is used for every API call. In `proxy` mode an authenticating proxy's
//! user and group headers become impersonation, but only from trusted addresses.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use axum::http::{HeaderMap, HeaderName};

use crate::session::{SESSION_COOKIE, SessionKey};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum IdentityMode {
    Local,
    Token,
    Proxy,
}

/// A bearer token; never printed.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(pub String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The identity a request acts with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// Local mode: the portal's own identity.
    Portal,
    /// Proxy mode: impersonated user and groups.
    User { name: String, groups: Vec<String> },
    /// Token mode: the user's own token (and the name the API server gave it).
    Bearer { name: String, token: Token },
}

impl Caller {
    /// A stable name for the credentials this caller acts with, for sharing live
    /// feeds (a token is named by its SHA-256, never by itself). `None` for the portal.
    pub fn feed_owner(&self) -> Option<String> {
        match self {
            Caller::Portal => None,
            // JSON keeps the parts apart: ("a:b", ["c"]) and ("a", ["b:c"]) differ.
            Caller::User { name, groups } => {
                Some(format!("user:{}", serde_json::json!([name, groups])))
            }
            Caller::Bearer { token, .. } => {
                let digest = ring::digest::digest(&ring::digest::SHA256, token.0.as_bytes());
                let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
                Some(format!("token:{hex}"))
            }
        }
    }

    /// Who, for audit lines.
    pub fn name(&self) -> &str {
        match self {
            Caller::Portal => "portal (local mode)",
            Caller::User { name, .. } | Caller::Bearer { name, .. } => name,
        }
    }
}

/// An address range in CIDR notation (`10.0.0.0/8`, `::1/128`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    prefix: u8,
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, prefix) = match s.trim().split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("{s:?} is not an address range"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("{s:?} has a bad prefix length"))?,
        };
        Ok(Self { addr, prefix })
    }
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// How requests are identified.
pub struct IdentityConfig {
    pub mode: IdentityMode,
    pub user_header: HeaderName,
    pub groups_header: HeaderName,
    /// Proxy mode: the only peers whose identity headers are believed.
    pub trusted: Vec<Cidr>,
    /// Token mode: the key sealing session cookies.
    pub sessions: Option<SessionKey>,
}

impl IdentityConfig {
    pub fn local() -> Self {
        Self {
            mode: IdentityMode::Local,
            user_header: HeaderName::from_static("x-forwarded-user"),
            groups_header: HeaderName::from_static("x-forwarded-groups"),
            trusted: vec![],
            sessions: None,
        }
    }

    /// The caller of a request from `peer` with `headers`; `None` when the request
    /// carries no identity this mode accepts.
    pub fn identify(&self, peer: Option<SocketAddr>, headers: &HeaderMap) -> Option<Caller> {
        match self.mode {
            IdentityMode::Local => Some(Caller::Portal),
            IdentityMode::Proxy => {
                let trusted = peer.is_some_and(|p| self.trusted.iter().any(|c| c.contains(p.ip())));
                if !trusted {
                    if headers.contains_key(&self.user_header) {
                        tracing::warn!(peer = ?peer, "identity headers from an untrusted address ignored");
                    }
                    return None;
                }
                let mut users = headers.get_all(&self.user_header).iter();
                let name = users.next()?.to_str().ok()?.trim();
                if users.next().is_some() {
                    // Which one would the proxy have meant? One was added on the way.
                    tracing::warn!(peer = ?peer, "a request with two user headers refused");
                    return None;
                }
                // Kubernetes' own identities are never a person behind a proxy.
                if name.is_empty() || name.starts_with("system:") {
                    return None;
                }
                // One header may list groups separated by commas; a proxy that repeats
                // the header sends one group per header, and a comma is then part of
                // the group's name. Counted before unreadable values are dropped.
                let values: Vec<_> = headers.get_all(&self.groups_header).iter().collect();
                let repeated = values.len() > 1;
                let split: Vec<&str> = values
                    .into_iter()
                    .filter_map(|v| v.to_str().ok())
                    .flat_map(|v| {
                        if repeated {
                            vec![v]
                        } else {
                            v.split(',').collect()
                        }
                    })
                    .collect();
                let groups = split
                    .into_iter()
                    .map(str::trim)
                    .filter(|g| !g.is_empty() && !g.starts_with("system:"))
                    .map(str::to_string)
                    .collect();
                Some(Caller::User {
                    name: name.to_string(),
                    groups,
                })
            }
            IdentityMode::Token => {
                let cookie = cookie_value(headers, SESSION_COOKIE)?;
                let session = self.sessions.as_ref()?.open(&cookie)?;
                Some(Caller::Bearer {
                    name: session.user,
                    token: Token(session.token),
                })
            }
        }
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

    fn proxy(trusted: &str) -> IdentityConfig {
        IdentityConfig {
            mode: IdentityMode::Proxy,
            trusted: vec![trusted.parse().expect("cidr")],
            ..IdentityConfig::local()
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
    fn cidrs_match_what_they_cover() {
        let net: Cidr = "10.1.0.0/16".parse().expect("cidr");
        assert!(net.contains("10.1.200.3".parse().expect("ip")));
        assert!(!net.contains("10.2.0.1".parse().expect("ip")));
        assert!(
            Cidr::from_str("0.0.0.0/0")
                .expect("all")
                .contains("8.8.8.8".parse().expect("ip"))
        );
        assert!(
            Cidr::from_str("127.0.0.1")
                .expect("one")
                .contains("::ffff:127.0.0.1".parse().expect("ip"))
        );
        assert!(Cidr::from_str("10.0.0.0/33").is_err());
        assert!(Cidr::from_str("nonsense").is_err());
    }

    #[test]
    fn proxy_headers_count_only_from_trusted_peers() {
        let h = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "dev, ops"),
            ("x-forwarded-groups", "qa"),
        ]);
        let peer: SocketAddr = "127.0.0.1:5000".parse().expect("addr");
        assert_eq!(
            proxy("127.0.0.1/32").identify(Some(peer), &h),
            Some(Caller::User {
                name: "ada".into(),
                // Repeated headers: one group each, commas included.
                groups: vec!["dev, ops".into(), "qa".into()]
            })
        );
        assert_eq!(
            proxy("10.0.0.0/8").identify(Some(peer), &h),
            None,
            "forged from an untrusted peer"
        );
        assert_eq!(proxy("127.0.0.1/32").identify(None, &h), None);
        assert_eq!(
            proxy("127.0.0.1/32").identify(Some(peer), &headers(&[])),
            None
        );
        let escalating = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "system:masters,dev"),
        ]);
        assert_eq!(
            proxy("127.0.0.1/32").identify(Some(peer), &escalating),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["dev".into()]
            }),
            "system groups are never taken from headers"
        );
        let as_system = headers(&[("x-forwarded-user", "system:admin")]);
        assert_eq!(proxy("127.0.0.1/32").identify(Some(peer), &as_system), None);
    }

    #[test]
    fn two_user_headers_are_refused_and_repeated_group_headers_are_not_split() {
        let peer: SocketAddr = "127.0.0.1:9".parse().expect("addr");
        let trusted = proxy("127.0.0.1/32");
        let smuggled = headers(&[("x-forwarded-user", "ada"), ("x-forwarded-user", "root")]);
        assert_eq!(trusted.identify(Some(peer), &smuggled), None);

        let repeated = headers(&[
            ("x-forwarded-user", "ada"),
            ("x-forwarded-groups", "finance, emea"),
            ("x-forwarded-groups", "dev"),
        ]);
        assert_eq!(
            trusted.identify(Some(peer), &repeated),
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
            trusted.identify(Some(peer), &odd),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["a,b".into()]
            })
        );
        let listed = headers(&[("x-forwarded-user", "ada"), ("x-forwarded-groups", "a, b")]);
        assert_eq!(
            trusted.identify(Some(peer), &listed),
            Some(Caller::User {
                name: "ada".into(),
                groups: vec!["a".into(), "b".into()]
            })
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
