//! How fast sign-in may be tried: per client and per claimed identity, never for
//! everyone together (one person flooding `/auth/login` must not lock the rest out).
//! Each attempt costs the API server a review, so guessing at speed is refused.

use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;

use axum::http::HeaderMap;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use governor::clock::DefaultClock;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};

use super::peer::Peer;

type Keyed<K> = RateLimiter<K, HashMapStateStore<K>, DefaultClock>;

/// Attempts per second from one client in the long run, and in a burst: plenty for a
/// person retrying a pasted token, far too few to guess one.
const PER_CLIENT: NonZeroU32 = nonzero(5);
const CLIENT_BURST: NonZeroU32 = nonzero(20);
/// Attempts naming one identity (a token's claimed subject) from one client.
const PER_IDENTITY: NonZeroU32 = nonzero(2);
const IDENTITY_BURST: NonZeroU32 = nonzero(30);
/// Clients remembered before idle ones are forgotten, so a spread of addresses cannot
/// grow the tables without bound.
const REMEMBERED: usize = 16_384;

const fn nonzero(n: u32) -> NonZeroU32 {
    match NonZeroU32::new(n) {
        Some(n) => n,
        None => NonZeroU32::MIN,
    }
}

/// Which bound an attempt met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limited {
    Client,
    Identity,
}

pub struct SignInLimits {
    by_client: Keyed<IpAddr>,
    by_identity: Keyed<(Option<IpAddr>, String)>,
    /// Proxies in front whose `X-Forwarded-For` entries are believed (0: none, the
    /// connection's address is the client's).
    forwarded_hops: usize,
}

impl SignInLimits {
    pub fn new(forwarded_hops: usize) -> Self {
        Self {
            by_client: RateLimiter::hashmap(
                Quota::per_second(PER_CLIENT).allow_burst(CLIENT_BURST),
            ),
            by_identity: RateLimiter::hashmap(
                Quota::per_second(PER_IDENTITY).allow_burst(IDENTITY_BURST),
            ),
            forwarded_hops,
        }
    }

    /// The client an attempt comes from: the connection's address, or, behind
    /// `forwarded_hops` trusted proxies, the address the outermost of them saw (each
    /// proxy appends the address it was reached from, so the entries to its right are
    /// the trusted ones; anything further left the client may have written).
    pub fn client(&self, peer: Option<&Peer>, headers: &HeaderMap) -> Option<IpAddr> {
        let connection = peer.map(|p| p.addr.ip());
        if self.forwarded_hops == 0 {
            return connection;
        }
        let forwarded: Vec<&str> = headers
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        forwarded
            .len()
            .checked_sub(self.forwarded_hops)
            .and_then(|i| forwarded.get(i))
            .and_then(|a| a.parse().ok())
            .or(connection)
    }

    /// Counts one attempt from `client` with `token`; refused when the client has tried
    /// too often just now, or has named the identity the token claims too often. The
    /// claim is unverified, so it is counted per client: forged tokens naming someone
    /// else's subject lock out only the client that sends them.
    pub fn check(&self, client: Option<IpAddr>, token: &str) -> Result<(), Limited> {
        for limiter in [&self.by_client as &dyn Forget, &self.by_identity] {
            limiter.forget_idle_when_full();
        }
        let network = client.map(network_of);
        if let Some(network) = network
            && self.by_client.check_key(&network).is_err()
        {
            return Err(Limited::Client);
        }
        if let Some(subject) = claimed_subject(token)
            && self.by_identity.check_key(&(network, subject)).is_err()
        {
            return Err(Limited::Identity);
        }
        Ok(())
    }
}

trait Forget {
    fn forget_idle_when_full(&self);
}

impl<K: std::hash::Hash + Eq + Clone> Forget for Keyed<K> {
    fn forget_idle_when_full(&self) {
        if self.len() >= REMEMBERED {
            self.retain_recent();
            self.shrink_to_fit();
        }
    }
}

/// One IPv6 client holds a /64 (its whole network), so it counts as one address.
fn network_of(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let mut segments = v6.segments();
            segments[4..].fill(0);
            IpAddr::V6(Ipv6Addr::from(segments))
        }
    }
}

/// The subject a JWT (a ServiceAccount or OIDC token) claims, unverified: only a key
/// for counting attempts, never believed for anything else.
fn claimed_subject(token: &str) -> Option<String> {
    let payload = token.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let subject = claims.get("sub")?.as_str()?;
    // Bounded, so one claim cannot make a large key.
    Some(subject.chars().take(256).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(addr: &str) -> Peer {
        Peer {
            addr: addr.parse().expect("socket address"),
        }
    }

    #[test]
    fn the_client_is_the_connection_or_what_the_trusted_proxy_saw() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "x-forwarded-for",
            "6.6.6.6, 10.0.0.9".parse().expect("value"),
        );
        let direct = SignInLimits::new(0);
        let behind_one = SignInLimits::new(1);
        let ingress = peer("10.1.0.5:41000");
        assert_eq!(
            direct.client(Some(&ingress), &headers),
            "10.1.0.5".parse().ok()
        );
        // The client wrote 6.6.6.6 itself; the ingress appended what it saw.
        assert_eq!(
            behind_one.client(Some(&ingress), &headers),
            "10.0.0.9".parse().ok()
        );
        assert_eq!(
            behind_one.client(Some(&ingress), &HeaderMap::new()),
            "10.1.0.5".parse().ok()
        );
    }

    #[test]
    fn one_flooding_client_does_not_limit_another() {
        let limits = SignInLimits::new(0);
        let flood = "192.0.2.1".parse().ok();
        let refused = (0..100)
            .filter(|_| limits.check(flood, "guess").is_err())
            .count();
        assert!(refused >= 70, "{refused}");
        assert_eq!(limits.check("192.0.2.2".parse().ok(), "mine"), Ok(()));
    }

    #[test]
    fn an_ipv6_network_counts_as_one_client() {
        let limits = SignInLimits::new(0);
        let refused = (0..100u16)
            .filter(|i| {
                let address = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, *i));
                limits.check(Some(address), "guess").is_err()
            })
            .count();
        assert!(refused >= 70, "{refused}");
    }

    #[test]
    fn forged_claims_of_someones_identity_lock_out_only_their_sender() {
        let limits = SignInLimits::new(0);
        let claims = URL_SAFE_NO_PAD.encode(br#"{"sub":"system:serviceaccount:team:ci"}"#);
        let forged = format!("eyJhbGciOiJSUzI1NiJ9.{claims}.forged");
        // From one address, its sender is refused; from many, the claimed identity is
        // not limited for all of them together (before, the 31st try anywhere was).
        let attacker = "192.0.2.66".parse().ok();
        let refused = (0..100)
            .filter(|_| limits.check(attacker, &forged).is_err())
            .count();
        assert!(refused >= 70, "{refused}");
        for last in 1..=20u8 {
            for _ in 0..10 {
                assert_eq!(
                    limits.check(Some(IpAddr::from([203, 0, 113, last])), &forged),
                    Ok(())
                );
            }
        }
        // The person whose subject was named signs in from their own address.
        assert_eq!(limits.check("198.51.100.7".parse().ok(), &forged), Ok(()));
    }
}
