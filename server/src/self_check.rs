//! `portico --check ...`: checks instead of serving, for the chart's `helm test` hooks,
//! run from Portico's own image (no other image is needed): that the portal answers,
//! and that a reconciler holds its leader Lease and renews it. Exits non-zero with a
//! sentence saying what does not hold.

use std::str::FromStr;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// How long one check may wait for an answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);
/// How long a check is tried again before it fails: `helm test` may run as the
/// rollout ends, before a reconciler has taken the Lease.
const HOLDS_WITHIN: Duration = Duration::from_secs(60);
const TRY_AGAIN_AFTER: Duration = Duration::from_secs(2);

/// One thing to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// `answers=URL`: a GET of the URL answers 2xx.
    Answers(String),
    /// `lease=NAMESPACE/NAME`: the Lease has a holder who renewed it within its duration.
    LeaseHeld { namespace: String, name: String },
}

#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("unknown check {0:?}: use answers=URL or lease=NAMESPACE/NAME")]
    Unknown(String),
    #[error("{url} did not answer: {error}")]
    NoAnswer { url: String, error: String },
    #[error("{url} answered {status}")]
    Refused { url: String, status: u16 },
    #[error("reading Lease {namespace}/{name}: {error}")]
    Lease {
        namespace: String,
        name: String,
        error: String,
    },
    #[error("Lease {0} has no holder: no reconciler leads")]
    NoHolder(String),
    #[error(
        "Lease {lease} was last renewed by {holder} at {renewed}, longer ago than its {seconds} s"
    )]
    Stale {
        lease: String,
        holder: String,
        renewed: String,
        seconds: i32,
    },
}

impl FromStr for Check {
    type Err = CheckError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.split_once('=') {
            Some(("answers", url)) if url.starts_with("http") => Ok(Self::Answers(url.into())),
            Some(("lease", lease)) => match lease.split_once('/') {
                Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
                    Ok(Self::LeaseHeld {
                        namespace: namespace.into(),
                        name: name.into(),
                    })
                }
                _ => Err(CheckError::Unknown(text.into())),
            },
            _ => Err(CheckError::Unknown(text.into())),
        }
    }
}

impl Check {
    /// Whether this check reads the cluster (and needs a client).
    pub fn reads_the_cluster(&self) -> bool {
        matches!(self, Self::LeaseHeld { .. })
    }
}

/// Runs `check` until it holds, at most [`HOLDS_WITHIN`]; the last failure if it never
/// does.
pub async fn run_until_it_holds(
    check: &Check,
    host: Option<&str>,
    client: Option<&kube::Client>,
) -> Result<String, CheckError> {
    let deadline = tokio::time::Instant::now() + HOLDS_WITHIN;
    loop {
        match run(check, host, client).await {
            Ok(held) => return Ok(held),
            Err(error) if tokio::time::Instant::now() + TRY_AGAIN_AFTER < deadline => {
                eprintln!("not yet: {error}");
                tokio::time::sleep(TRY_AGAIN_AFTER).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Runs `check` once; `host` is sent as the request's `Host` (the name the portal answers
/// to), `client` reads Leases.
pub async fn run(
    check: &Check,
    host: Option<&str>,
    client: Option<&kube::Client>,
) -> Result<String, CheckError> {
    match check {
        Check::Answers(url) => answers(url, host).await,
        Check::LeaseHeld { namespace, name } => {
            let lease_error = |error: String| CheckError::Lease {
                namespace: namespace.clone(),
                name: name.clone(),
                error,
            };
            let client = client.ok_or_else(|| lease_error("no Kubernetes configuration".into()))?;
            let leases: kube::Api<Lease> = kube::Api::namespaced(client.clone(), namespace);
            let lease = leases
                .get(name)
                .await
                .map_err(|e| lease_error(e.to_string()))?;
            held(&format!("{namespace}/{name}"), &lease, Timestamp::now())
        }
    }
}

async fn answers(url: &str, host: Option<&str>) -> Result<String, CheckError> {
    let no_answer = |error: String| CheckError::NoAnswer {
        url: url.into(),
        error,
    };
    let http = reqwest::Client::builder()
        .timeout(ANSWER_WITHIN)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| no_answer(e.to_string()))?;
    let mut request = http.get(url);
    if let Some(host) = host {
        request = request.header(http::header::HOST, host);
    }
    let response = request.send().await.map_err(|e| no_answer(e.to_string()))?;
    let status = response.status();
    if status.is_success() {
        Ok(format!("{url} answered {}", status.as_u16()))
    } else {
        Err(CheckError::Refused {
            url: url.into(),
            status: status.as_u16(),
        })
    }
}

/// Whether `lease` is held at `now`: a holder, and a renewal younger than its duration.
fn held(name: &str, lease: &Lease, now: Timestamp) -> Result<String, CheckError> {
    let spec = lease.spec.as_ref();
    let holder = spec
        .and_then(|s| s.holder_identity.clone())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| CheckError::NoHolder(name.into()))?;
    let seconds = spec.and_then(|s| s.lease_duration_seconds).unwrap_or(0);
    let renewed = spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0);
    let fresh = renewed
        .is_some_and(|at| now.duration_since(at) <= SignedDuration::from_secs(i64::from(seconds)));
    if fresh {
        Ok(format!("Lease {name} is held by {holder}"))
    } else {
        Err(CheckError::Stale {
            lease: name.into(),
            holder,
            renewed: renewed.map_or_else(|| "never".into(), |t| t.to_string()),
            seconds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_read_from_their_text() {
        assert_eq!(
            "answers=http://portico.portico.svc/readyz"
                .parse::<Check>()
                .ok(),
            Some(Check::Answers("http://portico.portico.svc/readyz".into()))
        );
        assert_eq!(
            "lease=portico/portico-reconciler".parse::<Check>().ok(),
            Some(Check::LeaseHeld {
                namespace: "portico".into(),
                name: "portico-reconciler".into()
            })
        );
        for wrong in ["lease=portico", "lease=/x", "answers=ftp://x", "ready", ""] {
            assert!(wrong.parse::<Check>().is_err(), "{wrong}");
        }
    }

    fn lease(holder: Option<&str>, renewed: Option<&str>) -> Lease {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "portico-reconciler"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "renewTime": renewed}
        }))
        .expect("a Lease")
    }

    #[test]
    fn a_lease_is_held_while_its_holder_renews_it() {
        let now: Timestamp = "2026-11-29T04:00:10Z".parse().expect("a time");
        let renewed = Some("2026-11-29T04:00:00.000000Z");
        assert!(held("p/l", &lease(Some("pod-a"), renewed), now).is_ok());
        let later: Timestamp = "2026-11-29T04:01:00Z".parse().expect("a time");
        let stale = held("p/l", &lease(Some("pod-a"), renewed), later).expect_err("stale");
        assert!(
            stale.to_string().contains("last renewed by pod-a"),
            "{stale}"
        );
        assert!(matches!(
            held("p/l", &lease(None, renewed), now),
            Err(CheckError::NoHolder(_))
        ));
        assert!(held("p/l", &lease(Some("pod-a"), None), now).is_err());
    }
}
