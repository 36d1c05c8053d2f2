//! Renewing a session's ID token once, however many of the person's requests arrive
//! with the old one at the same moment: the first asks the provider, the others wait
//! for its answer (a provider that rotates refresh tokens would refuse the second use
//! of one).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OnceCell;

use super::provider::OidcProvider;
use crate::auth::session::{Session, SessionKey};

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
    /// provider would not renew it (no refresh token, refused, unreachable).
    pub async fn renewed(
        &self,
        provider: &OidcProvider,
        keys: &SessionKey,
        session: &Session,
    ) -> Renewed {
        let tokens = session.provider.as_ref()?;
        let refresh = tokens.refresh.as_ref()?;
        let flight = {
            let mut flights = self.flights.lock().unwrap_or_else(|e| e.into_inner());
            flights.retain(|_, (at, _)| at.elapsed() < REMEMBERED_FOR);
            flights
                .entry(format!("{}:{}", session.id, tokens.expires))
                .or_insert_with(|| (Instant::now(), Arc::default()))
                .1
                .clone()
        };
        flight
            .get_or_init(|| async {
                let started = Instant::now();
                match provider.refresh(refresh).await {
                    Ok(fresh) => {
                        tracing::info!(
                            target: "portico::audit",
                            user = ?session.user,
                            verb = "refresh",
                            result = "ok",
                            elapsed_ms = started.elapsed().as_millis() as u64,
                            "audit"
                        );
                        keys.with_new_token(session, fresh.id_token, fresh.provider)
                    }
                    Err(error) => {
                        tracing::warn!(user = ?session.user, %error, "the ID token could not be renewed");
                        None
                    }
                }
            })
            .await
            .clone()
    }
}
