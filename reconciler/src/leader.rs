//! Leader election through a coordination.k8s.io Lease, so that of several Portico
//! replicas exactly one reconciles Stacks. The holder renews the Lease; another
//! replica takes it over once it has not been renewed for its duration, or at once
//! when the holder releases it on shutdown.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::PostParams;
use tokio::sync::{oneshot, watch};

use portico_cluster::error::{Failure, failure};

#[derive(Debug, Clone)]
pub struct LeaseSettings {
    pub namespace: String,
    pub name: String,
    /// This replica's name in the Lease (its pod name in a cluster).
    pub identity: String,
    /// How long a Lease holds without renewal.
    pub duration: Duration,
    /// How often the holder renews, and others retry.
    pub retry: Duration,
}

impl LeaseSettings {
    pub fn new(namespace: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: "portico-reconciler".into(),
            identity: identity.into(),
            duration: Duration::from_secs(15),
            retry: Duration::from_secs(4),
        }
    }
}

/// Resolves when leadership ends (lost, or the process is shutting down).
pub type Stop = oneshot::Receiver<()>;

fn seconds(d: Duration) -> i32 {
    i32::try_from(d.as_secs()).unwrap_or(i32::MAX)
}

/// Takes the Lease if it is free, expired or already ours; `Ok(false)` when another
/// replica holds it (or won a race for it).
pub async fn try_acquire(api: &Api<Lease>, s: &LeaseSettings) -> Result<bool, kube::Error> {
    let now = Timestamp::now();
    let Some(mut lease) = api.get_opt(&s.name).await? else {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(s.name.clone()),
                namespace: Some(s.namespace.clone()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(s.identity.clone()),
                lease_duration_seconds: Some(seconds(s.duration)),
                acquire_time: Some(MicroTime(now)),
                renew_time: Some(MicroTime(now)),
                lease_transitions: Some(0),
                ..Default::default()
            }),
        };
        return match api.create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(true),
            // Another replica created it first (both start at once): it leads.
            Err(e) if matches!(failure(&e), Failure::Conflict | Failure::AlreadyExists) => {
                Ok(false)
            }
            Err(e) => Err(e),
        };
    };
    let spec = lease.spec.get_or_insert_with(Default::default);
    let holder = spec.holder_identity.clone().unwrap_or_default();
    let held_for = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(0)));
    let expired = spec
        .renew_time
        .as_ref()
        .is_none_or(|t| t.0.checked_add(held_for).is_ok_and(|until| until < now));
    if holder != s.identity && !holder.is_empty() && !expired {
        return Ok(false);
    }
    if holder != s.identity {
        spec.acquire_time = Some(MicroTime(now));
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
    }
    spec.holder_identity = Some(s.identity.clone());
    spec.renew_time = Some(MicroTime(now));
    spec.lease_duration_seconds = Some(seconds(s.duration));
    // The resourceVersion read above makes this a compare-and-swap.
    match api.replace(&s.name, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(e) if failure(&e) == Failure::Conflict => Ok(false),
        Err(e) => Err(e),
    }
}

/// Gives the Lease up so another replica need not wait for it to expire.
async fn release(api: &Api<Lease>, s: &LeaseSettings) -> Result<(), kube::Error> {
    let Some(mut lease) = api.get_opt(&s.name).await? else {
        return Ok(());
    };
    let spec = lease.spec.get_or_insert_with(Default::default);
    if spec.holder_identity.as_deref() != Some(s.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    api.replace(&s.name, &PostParams::default(), &lease)
        .await
        .map(|_| ())
}

/// Runs `work` whenever this replica holds the Lease, until `shutdown` turns true.
/// `work` gets a [`Stop`] that resolves when leadership ends; it must then finish.
pub async fn lead<W, F>(
    client: kube::Client,
    s: LeaseSettings,
    mut shutdown: watch::Receiver<bool>,
    mut work: W,
) where
    W: FnMut(Stop) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let api: Api<Lease> = Api::namespaced(client, &s.namespace);
    loop {
        // Follow.
        loop {
            if *shutdown.borrow() {
                return;
            }
            match tokio::time::timeout(s.retry, try_acquire(&api, &s)).await {
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%error, lease = %s.name, "cannot read the leader Lease")
                }
                Err(_) => {
                    tracing::warn!(lease = %s.name, "the leader Lease did not answer in time")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(s.retry) => {}
                _ = shutdown.wait_for(|down| *down) => return,
            }
        }
        tracing::info!(identity = %s.identity, lease = %s.name, "leading: the reconciler runs here");
        let (stop, stopped) = oneshot::channel();
        let running = tokio::spawn(work(stopped));
        // Counted from before the request, as the Lease's renewTime is.
        let mut last_renewal = tokio::time::Instant::now() - s.retry;
        // Lead until the Lease is lost or the process stops.
        let lost = loop {
            tokio::select! {
                _ = tokio::time::sleep(s.retry) => {}
                _ = shutdown.wait_for(|down| *down) => break false,
            }
            let attempt = tokio::time::Instant::now();
            match tokio::time::timeout(s.retry, try_acquire(&api, &s)).await {
                Ok(Ok(true)) => last_renewal = attempt,
                Ok(Ok(false)) => break true,
                // Keep leading through brief API trouble, but stop a full retry
                // interval before another replica may take the Lease.
                failed => {
                    match failed {
                        Ok(Err(error)) => tracing::warn!(%error, "cannot renew the leader Lease"),
                        _ => tracing::warn!("renewing the leader Lease did not answer in time"),
                    }
                    if last_renewal.elapsed() + s.retry * 2 >= s.duration {
                        break true;
                    }
                }
            }
        };
        let _ = stop.send(());
        if let Err(error) = running.await {
            tracing::error!(%error, "the reconciler task failed");
        }
        if lost {
            tracing::warn!(identity = %s.identity, "lost the leader Lease; following");
        } else {
            if let Err(error) = release(&api, &s).await {
                tracing::warn!(%error, "could not release the leader Lease");
            }
            return;
        }
    }
}
