//! DNS rebinding guard. A page on `http://rebind.example:3000` whose name is re-resolved
//! to Portico's address is same-origin with itself: its requests pass the CSRF guard
//! (Origin and Host agree) and, in local mode, act with the kubeconfig's identity. The
//! one thing such a page cannot change is the name in `Host`, its own. So Portico
//! answers only requests naming it: an IP address (no rebinding can produce one; the
//! kubelet's probes and `127.0.0.1:3000` use them), `localhost`, or a name the
//! operator allowed (`--allowed-hosts`, the Ingress' host in a deployment).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::IpAddr;
use std::sync::Arc;

/// The names Portico answers to besides IP addresses and `localhost`.
#[derive(Debug, Clone, Default)]
pub struct AllowedHosts {
    names: Vec<String>,
}

impl AllowedHosts {
    /// `names`, as given (`portico.example.com`, with or without a port: any port
    /// is accepted for a listed name).
    pub fn new(names: &[String]) -> Self {
        Self {
            names: names
                .iter()
                .map(|n| normalised(without_port(n.trim())))
                .filter(|n| !n.is_empty())
                .collect(),
        }
    }

    /// Whether a request whose `Host` (or HTTP/2 authority) is `host` is for Portico.
    pub fn admits(&self, host: &str) -> bool {
        let name = without_port(host);
        if name.parse::<IpAddr>().is_ok() {
            return true;
        }
        let name = normalised(name);
        name == "localhost" || self.names.contains(&name)
    }
}

fn normalised(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `host` without a trailing `:port` (and an IPv6 literal without its brackets).
fn without_port(host: &str) -> &str {
    if let Some(bracketed) = host.strip_prefix('[') {
        return bracketed.split_once(']').map_or(host, |(ip, _)| ip);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// The name a request is addressed to: `Host`, or the authority an HTTP/2 request
/// carries in its URI instead.
fn requested_host(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()))
}

pub async fn guard(
    State(allowed): State<Arc<AllowedHosts>>,
    request: Request,
    next: Next,
) -> Response {
    match requested_host(&request) {
        Some(host) if allowed.admits(host) => next.run(request).await,
        host => {
            // The name is the requester's; logged in Debug form so it cannot forge lines.
            tracing::warn!(host = ?host, path = %request.uri().path(), "refused a request for another host name");
            (
                StatusCode::MISDIRECTED_REQUEST,
                "Portico does not answer to this host name. If it is Portico's own, add it \
                 to --allowed-hosts (PORTICO_ALLOWED_HOSTS).",
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_localhost_and_listed_names_pass_and_other_names_do_not() {
        let allowed = AllowedHosts::new(&["Portico.Example.com".into(), "tools.test:443".into()]);
        for host in [
            "127.0.0.1:3000",
            "10.1.2.3",
            "[::1]:3000",
            "[fe80::1]",
            "localhost:3000",
            "LOCALHOST",
            "portico.example.com",
            "portico.example.com.:8443",
            "tools.test",
        ] {
            assert!(allowed.admits(host), "{host}");
        }
        for host in [
            "rebind.example:3000",
            "127.0.0.1.nip.io:3000",
            "portico.example.com.evil.test",
            "evil.portico.example.com",
            "localhost.evil.test",
            "",
            "[::1",
        ] {
            assert!(!allowed.admits(host), "{host}");
        }
    }
}
