//! Renewing a session's ID token once, however many of the person's requests arrive
//! with the old one at the same moment: the first asks the provider, the others wait
//! for its answer (a provider that rotates refresh tokens would refuse the second use
//! of one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use super::provider::OidcProvider;
use crate::auth::identity::IdentityConfig;
use crate::auth::session::Session;

/// How long a renewal's outcome is remembered for requests still carrying the old
/// cookie (its answer may not have reached the browser yet).
const REMEMBERED_FOR: Duration = Duration::from_secs(120);

type Renewed = Option<(Session, String)>;

/// A renewal under way or just done: when it began, and its outcome once known.
type Flight = (Instant, Arc<OnceCell<Renewed>>);

#[derive(Default)]
pub struct Refreshes {
    flights: Mutex<HashMap<String, Flight>>,
}

impl Refreshes {
    /// `session` with a new ID token and its new cookie value, or `None` when the
    /// provider would not renew it (no refresh token, refused, unreachable). A failure
    /// is not remembered: the next request asks again.
    pub async fn renewed(
        &self,
        provider: &Arc<OidcProvider>,
        identity: &Arc<IdentityConfig>,
        session: &Session,
    ) -> Renewed {
        let tokens = session.provider.as_ref()?;
        let key = format!("{}:{}", session.id, tokens.expires);
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            flights.retain(|_, (at, _)| at.elapsed() < REMEMBERED_FOR);
            flights
                .entry(key.clone())
                .or_insert_with(|| (Instant::now(), Arc::default()))
                .1
                .clone()
        };
        let outcome = flight
            .get_or_init(|| {
                // On a task of its own: a request the browser abandons must not stop
                // a renewal half-way, after the provider rotated the refresh token.
                let renewal = renew(provider.clone(), identity.clone(), session.clone());
                async move { tokio::spawn(renewal).await.ok().flatten() }
            })
            .await
            .clone();
        if outcome.is_none() {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            if flights
                .get(&key)
                .is_some_and(|(_, f)| Arc::ptr_eq(f, &flight))
            {
                flights.remove(&key);
            }
        }
        outcome
    }
}

/// Asks the provider for a new ID token for `session` and seals it.
async fn renew(
    provider: Arc<OidcProvider>,
    identity: Arc<IdentityConfig>,
    session: Session,
) -> Renewed {
    let refresh = session.provider.as_ref()?.refresh.clone()?;
    let keys = identity.sessions.as_ref()?;
    let started = Instant::now();
    match provider.refresh(&refresh).await {
        Ok(fresh) => {
            tracing::info!(
                target: "portico::audit",
                user = ?session.user,
                verb = "refresh",
                result = "ok",
                elapsed_ms = started.elapsed().as_millis() as u64,
                "audit"
            );
            crate::portal_metrics::PORTAL.renewal("ok");
            keys.with_new_token(&session, fresh.id_token, fresh.provider)
        }
        Err(error) => {
            tracing::warn!(user = ?session.user, %error, "the ID token could not be renewed");
            crate::portal_metrics::PORTAL.renewal("failed");
            None
        }
    }
}
