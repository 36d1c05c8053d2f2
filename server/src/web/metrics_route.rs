//! `/metrics` on a listener of its own (`--metrics-listen`): the reconciler's families,
//! the portal's ([`crate::portal_metrics`]) with what is live read at each scrape, and
//! the process'. Also the middleware that counts the portal's HTTP requests.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::live::LiveState;
use crate::portal_metrics::{LiveNow, PORTAL, method_of, route_of};
use crate::reconcile::metrics::{CONTENT_TYPE, Metrics};

/// What a scrape reads: the reconciler's metrics, and the live state where this
/// process serves the portal (none with `--reconciler only`).
#[derive(Clone)]
pub struct Scraped {
    pub reconciler: Arc<Metrics>,
    pub live: Option<LiveState>,
}

/// `/metrics` alone: no identity, CSRF or site layers, which are the portal's and
/// would refuse or redirect Prometheus.
pub fn router(scraped: Scraped) -> axum::Router {
    axum::Router::new()
        .route("/metrics", axum::routing::get(scrape))
        .with_state(scraped)
}

async fn scrape(State(scraped): State<Scraped>) -> Response {
    if let Some(live) = &scraped.live {
        PORTAL.set_live(live_now(live));
    }
    let encoded = scraped.reconciler.encode_families().and_then(|mut text| {
        PORTAL.encode_into(&mut text)?;
        prometheus_client::encoding::text::encode_eof(&mut text)?;
        Ok(text)
    });
    match encoded {
        Ok(text) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response(),
        Err(error) => {
            tracing::error!(%error, "cannot encode the metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

fn live_now(live: &LiveState) -> LiveNow {
    LiveNow {
        open: vec![
            ("sockets", live.sockets.total()),
            ("streams", live.streams.total()),
            ("terminals", live.terminals.total()),
            ("home_pages", live.overviews.total()),
        ],
        feeds: live.hub.feeds_by_resource(),
        bytes_held: live.hub.bytes_held(&None).1,
        bytes_limit: live.hub.bytes_limit(),
    }
}

/// Counts each request by route (below the base path `base`), method and status,
/// timed until its answer's head.
pub async fn count_requests(
    State(base): State<portico_core::base_path::BasePath>,
    request: Request<Body>,
    next: Next,
) -> Response {
    let started = Instant::now();
    let path = request.uri().path();
    let below_base = path.strip_prefix(base.as_str()).unwrap_or(path);
    let route = route_of(if below_base.is_empty() {
        "/"
    } else {
        below_base
    });
    let method = method_of(request.method());
    let response = next.run(request).await;
    PORTAL.http_request(route, method, response.status().as_u16(), started);
    response
}
