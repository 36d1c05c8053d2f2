//! Cross-site request forgery guard for every state-changing request (server
//! functions are POSTs). A browser marks where a request comes from: `Sec-Fetch-Site`
//! in current browsers, `Origin` on every cross-origin POST in all of them. A request
//! that says it comes from another site is refused; non-browser clients (no cookies to
//! abuse) send neither and pass.

use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Why a request is treated as cross-site, if it is.
pub fn cross_site_reason(method: &Method, headers: &HeaderMap) -> Option<&'static str> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    if let Some(site) = headers.get("sec-fetch-site") {
        return (site.as_bytes() != b"same-origin").then_some("Sec-Fetch-Site is not same-origin");
    }
    let origin = headers.get(header::ORIGIN)?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://").map(|(_, rest)| rest));
    match (origin_host, host) {
        (Some(o), Some(h)) if o == h => None,
        _ => Some("Origin does not match Host"),
    }
}

pub async fn guard(request: Request, next: Next) -> Response {
    if let Some(reason) = cross_site_reason(request.method(), request.headers()) {
        tracing::warn!(reason, path = %request.uri().path(), "refused a cross-site request");
        return (
            StatusCode::FORBIDDEN,
            "Portico refuses state-changing requests from other sites.",
        )
            .into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().expect("header value"));
        }
        h
    }

    #[test]
    fn reads_pass_and_same_origin_writes_pass() {
        let cross = headers(&[("sec-fetch-site", "cross-site")]);
        assert_eq!(cross_site_reason(&Method::GET, &cross), None);
        let same = headers(&[
            ("sec-fetch-site", "same-origin"),
            ("origin", "http://portal:3000"),
            ("host", "portal:3000"),
        ]);
        assert_eq!(cross_site_reason(&Method::POST, &same), None);
        assert_eq!(
            cross_site_reason(&Method::POST, &HeaderMap::new()),
            None,
            "non-browser client"
        );
    }

    #[test]
    fn cross_site_writes_are_refused() {
        for h in [
            headers(&[("sec-fetch-site", "cross-site")]),
            headers(&[("sec-fetch-site", "same-site")]),
            headers(&[("origin", "http://evil.example"), ("host", "portal:3000")]),
            headers(&[("origin", "null"), ("host", "portal:3000")]),
        ] {
            assert!(cross_site_reason(&Method::POST, &h).is_some(), "{h:?}");
            assert!(cross_site_reason(&Method::DELETE, &h).is_some(), "{h:?}");
        }
    }
}
