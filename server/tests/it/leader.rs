//! Leader election against a real kube-apiserver, with a stand-in for the reconciler
//! that only reports whether it runs. A Lease left by a holder that vanished without
//! releasing it is taken once it expires, not before; a leader steps down when another
//! replica's name appears in its Lease, and when it can no longer reach the API server
//! to renew it, before the Lease can expire (so before the standby takes over). Each
//! test works in its own namespace, with its own Lease.
use std::net::SocketAddr;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use portico_control_plane::cluster::TestCluster;
use portico_server::reconcile::leader::{self, LeaseSettings};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

const WAIT: Duration = Duration::from_secs(60);
/// The Lease `LeaseSettings::new` names.
const LEASE: &str = "portico-reconciler";

async fn admin() -> kube::Client {
    TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client")
}

async fn lease(client: &kube::Client, ns: &str) -> LeaseSpec {
    Api::<Lease>::namespaced(client.clone(), ns)
        .get(LEASE)
        .await
        .expect("Lease")
        .spec
        .expect("the Lease's spec")
}

/// What a replica's stand-in for the reconciler is doing, and since when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Idle,
    Running(Instant),
    Stopped(Instant),
}

/// One replica electing through the Lease in `namespace`; its work only reports.
struct Replica {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    work: watch::Receiver<Work>,
}

impl Replica {
    fn start(client: &kube::Client, namespace: &str, identity: &str, duration: Duration) -> Self {
        let mut lease = LeaseSettings::new(namespace, identity);
        lease.duration = duration;
        lease.retry = Duration::from_millis(500);
        let (stop, shutdown) = watch::channel(false);
        let (report, work) = watch::channel(Work::Idle);
        let task = tokio::spawn(leader::lead(
            client.clone(),
            lease,
            shutdown,
            move |stopped| {
                let report = report.clone();
                async move {
                    report.send_replace(Work::Running(Instant::now()));
                    let _ = stopped.await;
                    report.send_replace(Work::Stopped(Instant::now()));
                }
            },
        ));
        Self { stop, task, work }
    }

    async fn until(&mut self, what: &str, done: impl FnMut(&Work) -> bool) -> Work {
        *tokio::time::timeout(WAIT, self.work.wait_for(done))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
            .expect("the replica reports its work")
    }

    /// Waits until the work runs; returns when it started.
    async fn until_running(&mut self) -> Instant {
        match self
            .until("the work to run", |w| matches!(w, Work::Running(_)))
            .await
        {
            Work::Running(since) => since,
            other => panic!("{other:?}"),
        }
    }

    /// Waits until the work has stopped; returns when it did.
    async fn until_stopped(&mut self) -> Instant {
        match self
            .until("the work to stop", |w| matches!(w, Work::Stopped(_)))
            .await
        {
            Work::Stopped(at) => at,
            other => panic!("{other:?}"),
        }
    }

    async fn shut_down(self) {
        self.stop.send_replace(true);
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("the replica stops in time")
            .expect("the replica's task ends cleanly");
    }
}

#[tokio::test]
async fn a_lease_left_by_a_vanished_holder_is_taken_once_it_expires() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "lease-orphan").await;
    // A holder that died without releasing: renewed just now, never again.
    let now = Timestamp::now();
    let vanished = Lease {
        metadata: ObjectMeta {
            name: Some(LEASE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("vanished".into()),
            lease_duration_seconds: Some(5),
            acquire_time: Some(MicroTime(now)),
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(1),
            ..Default::default()
        }),
    };
    let written = Api::<Lease>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &vanished)
        .await
        .expect("create the Lease");
    // As stored: to the microsecond.
    let renewed = written
        .spec
        .and_then(|s| s.renew_time)
        .expect("renewTime")
        .0;
    let expires = renewed.checked_add(Duration::from_secs(5)).expect("a time");

    let mut heir = Replica::start(&client, &ns, "heir", Duration::from_secs(15));
    heir.until_running().await;
    let spec = lease(&client, &ns).await;
    assert_eq!(spec.holder_identity.as_deref(), Some("heir"));
    let acquired = spec.acquire_time.expect("acquireTime").0;
    // Not before it expired; how soon after is a benchmark's question (a follower
    // retries every 0.5 s), not a test's.
    assert!(
        acquired >= expires,
        "taken at {acquired}, before the Lease expired at {expires}"
    );

    heir.shut_down().await;
    assert_eq!(
        lease(&client, &ns).await.holder_identity,
        None,
        "a stopping leader releases the Lease"
    );
}

#[tokio::test]
async fn a_leader_whose_lease_names_another_replica_stops_and_leaves_it() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "lease-taken").await;
    let mut first = Replica::start(&client, &ns, "first", Duration::from_secs(15));
    first.until_running().await;

    // Another holder in the Lease, as after a replica judged it expired.
    Api::<Lease>::namespaced(client.clone(), &ns)
        .patch(
            LEASE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {
                "holderIdentity": "usurper",
                "acquireTime": MicroTime(Timestamp::now()),
                "renewTime": MicroTime(Timestamp::now()),
                "leaseDurationSeconds": 60,
            }})),
        )
        .await
        .expect("write another holder");
    // Seen by its next read of the Lease: nothing else stops it (the API server
    // answers, so its renewals do not fail), whatever the timing.
    first.until_stopped().await;
    // It follows: the usurper's term is 60 s, so the Lease is not taken back meanwhile.
    // (A bounded look for what must not happen, not a wait for something to happen.)
    assert!(
        tokio::time::timeout(
            Duration::from_secs(5),
            first.work.wait_for(|w| matches!(w, Work::Running(_)))
        )
        .await
        .is_err(),
        "the former leader took the Lease back"
    );
    assert_eq!(
        lease(&client, &ns).await.holder_identity.as_deref(),
        Some("usurper")
    );

    first.shut_down().await;
    assert_eq!(
        lease(&client, &ns).await.holder_identity.as_deref(),
        Some("usurper"),
        "a follower never releases another's Lease"
    );
}

#[tokio::test]
async fn a_leader_cut_off_from_the_api_server_stops_before_the_standby_takes_over() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "lease-cut").await;
    let relay = Relay::start().await;
    // A 6 s term renewed every second: cut off, the leader stops 5 s after its last
    // renewal, and the standby may take over only after 6 s.
    let mut leader = Replica::start(&relay.client(), &ns, "cut-off", Duration::from_secs(6));
    leader.until_running().await;
    let mut standby = Replica::start(&client, &ns, "standby", Duration::from_secs(6));

    relay.cut();
    // What matters is the order, not how long either took.
    let stopped = leader.until_stopped().await;
    let took_over = standby.until_running().await;
    assert!(
        stopped < took_over,
        "the standby ran {:?} before the cut-off leader stopped",
        stopped.duration_since(took_over)
    );
    assert_eq!(
        lease(&client, &ns).await.holder_identity.as_deref(),
        Some("standby")
    );

    standby.shut_down().await;
    // Cut off, it follows and cannot reach the Lease; it still stops.
    leader.shut_down().await;
}

/// A TCP relay to the API server that can be cut: from then on it neither answers nor
/// closes a connection, like a network that drops the leader's packets (kube sets no
/// read timeout, so its requests then wait for ever).
struct Relay {
    addr: SocketAddr,
    cut: watch::Sender<bool>,
    config: kube::Config,
}

impl Relay {
    async fn start() -> Self {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(TestCluster::shared().admin_kubeconfig())
                .expect("admin kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("admin configuration");
        let host = config.cluster_url.host().expect("API server host");
        let port = config.cluster_url.port_u16().unwrap_or(443);
        let upstream = format!("{host}:{port}");
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("relay address");
        let (cut, is_cut) = watch::channel(false);
        tokio::spawn(async move {
            // Connections made after the cut are kept open and never answered.
            let mut unanswered = Vec::new();
            while let Ok((mut inbound, _)) = listener.accept().await {
                if *is_cut.borrow() {
                    unanswered.push(inbound);
                    continue;
                }
                let upstream = upstream.clone();
                let mut is_cut = is_cut.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => return,
                        _ = is_cut.wait_for(|cut| *cut) => {}
                    }
                    // Cut: stop relaying but keep both ends open. (Not awaited in the
                    // branch above, whose `watch::Ref` would make the task !Send.)
                    std::future::pending::<()>().await
                });
            }
        });
        Self { addr, cut, config }
    }

    /// The admin's client, through the relay.
    fn client(&self) -> kube::Client {
        let mut config = self.config.clone();
        // The API server's certificate names it, not the relay.
        if config.tls_server_name.is_none() {
            config.tls_server_name = config.cluster_url.host().map(str::to_string);
        }
        config.cluster_url = format!("https://{}", self.addr).parse().expect("relay URL");
        kube::Client::try_from(config).expect("client through the relay")
    }

    fn cut(&self) {
        self.cut.send_replace(true);
    }
}
