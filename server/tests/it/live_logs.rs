//! Live container logs over the tab's socket (`/api/live`, topic `logs`), against the
//! local cluster's real node, where containers run and kubelet serves their logs:
//! following lines as they are written, the previous run after a restart, a person
//! without `pods/log` refused with a sentence, and the per-view bound on a flood.
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use portico_control_plane::cluster::TestCluster;
use portico_core::live::protocol::{ClientMessage, LogQuery, ServerMessage, Topic};
use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use serde_json::json;

use crate::kit::socket::{self, Socket};

// Terminals, the home page and usage run on the same real node: one cluster start for all.
#[path = "home.rs"]
mod home;
#[path = "terminal.rs"]
mod terminal;
#[path = "usage.rs"]
mod usage;

const WAIT: Duration = Duration::from_secs(20);
/// Real containers: an image from the node's store, a sandbox, a process.
const START_WAIT: Duration = Duration::from_secs(120);
const IMAGE: &str = "portico.local/mariadb:10.11";

async fn admin() -> kube::Client {
    crate::kit::admin_with_stack_crd_on(TestCluster::shared_real()).await
}

/// The tab's socket, as the person whose session `cookie` is if given.
async fn connect(origin: &str, cookie: Option<&str>) -> Socket {
    socket::connect(origin, socket::LIVE, cookie, None).await
}

async fn subscribe(socket: &mut Socket, id: u32, query: LogQuery) {
    subscribe_to(socket, id, Topic::Logs { query }).await;
}

/// Subscribes `socket` to `topic` as view `id`.
async fn subscribe_to(socket: &mut Socket, id: u32, topic: Topic) {
    let message = ClientMessage::Subscribe {
        id,
        topic,
        resume: None,
    };
    socket::send_json(socket, &message).await;
}

/// Subscribes `socket` to the merged log of the Pods `selector` matches in `ns`, as
/// view 1.
async fn subscribe_workload(
    socket: &mut Socket,
    ns: &str,
    selector: &str,
    tail_lines: Option<u32>,
) {
    let query = portico_core::live::protocol::WorkloadLogQuery {
        namespace: ns.to_string(),
        selector: selector.to_string(),
        tail_lines,
    };
    subscribe_to(socket, 1, Topic::WorkloadLogs { query }).await;
}

/// Portico in token mode (in this process) over the real node's cluster, with `limits`
/// if given: its origin, and its state (kept while the test runs).
async fn token_mode_portal(
    admin: &kube::Client,
    limits: Option<portico_server::live::budgets::limits::LiveLimits>,
) -> (String, portico_server::web::state::AppState) {
    let identity = IdentityConfig {
        mode: IdentityMode::Token,
        sessions: Some(SessionKey::random().expect("key")),
        ..IdentityConfig::local()
    };
    let config = portico_server::cluster::config::config(
        Some(TestCluster::shared_real().admin_kubeconfig()),
        None,
    )
    .await
    .expect("admin config");
    crate::kit::serve_limited(admin, Some((identity, config)), limits).await
}

/// Subscribes `socket` to the live table of Pods in `ns` as view `id`.
async fn subscribe_pods_table(socket: &mut Socket, id: u32, ns: &str) {
    let query = portico_core::table::wire::TableQuery {
        group: String::new(),
        version: "v1".into(),
        plural: "pods".into(),
        namespace: Some(ns.to_string()),
        label_selector: None,
        field_selector: None,
        columns: None,
    };
    subscribe_to(socket, id, Topic::Table { query }).await;
}

/// The next message and its size on the wire; `None` once the socket is closed.
async fn receive_sized(socket: &mut Socket) -> Option<(ServerMessage, usize)> {
    let text = socket::next_text(socket, WAIT).await?;
    Some((
        serde_json::from_str(&text).expect("a server message"),
        text.len(),
    ))
}

async fn receive(socket: &mut Socket) -> ServerMessage {
    receive_sized(socket).await.expect("the socket is open").0
}

fn query(ns: &str, pod: &str) -> LogQuery {
    LogQuery {
        namespace: ns.into(),
        pod: pod.into(),
        container: None,
        previous: false,
        tail_lines: Some(5),
    }
}

/// A Pod of one container `app` running `script` in `sh`.
async fn run_pod(client: &kube::Client, ns: &str, name: &str, script: &str) {
    run_labelled_pod(client, ns, (name, json!({})), script).await;
}

/// [`run_pod`], with `labels`.
async fn run_labelled_pod(
    client: &kube::Client,
    ns: &str,
    (name, labels): (&str, serde_json::Value),
    script: &str,
) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "restartPolicy": "Always",
            "automountServiceAccountToken": false,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": IMAGE, "imagePullPolicy": "Never",
                            "command": ["sh", "-c", script]}],
        },
    }))
    .expect("pod");
    crate::kit::create_soon(&Api::namespaced(client.clone(), ns), &pod).await;
}

/// Waits until `name`'s container `app` is running and has restarted `restarts` times.
async fn until_running(client: &kube::Client, ns: &str, name: &str, restarts: i32) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + START_WAIT;
    loop {
        let pod = pods.get(name).await.expect("pod");
        let status = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|s| s.first().cloned());
        if let Some(s) = &status
            && s.restart_count >= restarts
            && s.state.as_ref().and_then(|s| s.running.as_ref()).is_some()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name} never ran with {restarts} restarts: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The number in a `line N` line.
fn number(line: &str) -> Option<u64> {
    line.strip_prefix("line ")?.parse().ok()
}

#[tokio::test]
async fn a_running_containers_log_follows_what_it_writes_after_the_view_opened() {
    let client = admin().await;
    let (origin, state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-follow").await;
    run_pod(
        &client,
        &ns,
        "writer",
        // Colour codes, as many programs write them: the page gets plain text.
        r#"i=0; while true; do printf '\033[32mline %d\033[0m\n' $i; i=$((i+1)); sleep 0.3; done"#,
    )
    .await;
    until_running(&client, &ns, "writer", 0).await;

    let mut socket = connect(&origin, None).await;
    subscribe(&mut socket, 1, query(&ns, "writer")).await;
    let ServerMessage::LogOpened {
        id: 1,
        container,
        containers,
    } = receive(&mut socket).await
    else {
        panic!("the view opens with the Pod's containers");
    };
    assert_eq!(container, "app");
    assert_eq!(containers.len(), 1);
    assert_eq!(state.live.streams.open_for(&None), 1, "a live view counted");

    // The tail first (at most 5 lines), then lines written after it, in order.
    let mut seen: Vec<u64> = Vec::new();
    let mut first_batch = None;
    while seen.len() < 12 {
        match receive(&mut socket).await {
            ServerMessage::Log {
                id: 1,
                lines,
                skipped,
            } => {
                assert_eq!(skipped, 0);
                for line in &lines {
                    assert!(!line.contains('\u{1b}'), "escapes stripped: {line:?}");
                    seen.push(number(line).unwrap_or_else(|| panic!("a numbered line: {line:?}")));
                }
                first_batch.get_or_insert(lines.len());
            }
            other => panic!("lines expected, got {other:?}"),
        }
    }
    assert!(
        first_batch.is_some_and(|n| n <= 5),
        "the tail: {first_batch:?}"
    );
    assert!(
        seen.windows(2).all(|w| w[1] == w[0] + 1),
        "consecutive: {seen:?}"
    );

    // Closing the view gives its place back.
    socket::send_json(&mut socket, &ClientMessage::Unsubscribe { id: 1 }).await;
    let deadline = Instant::now() + WAIT;
    while state.live.streams.open_for(&None) != 0 {
        assert!(Instant::now() < deadline, "the view was not released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // It never restarted: no previous run, said plainly.
    subscribe(
        &mut socket,
        2,
        LogQuery {
            previous: true,
            ..query(&ns, "writer")
        },
    )
    .await;
    assert!(matches!(
        receive(&mut socket).await,
        ServerMessage::LogOpened { id: 2, .. }
    ));
    let ServerMessage::LogEnded { id: 2, message } = receive(&mut socket).await else {
        panic!("no previous log");
    };
    assert!(message.contains("no previous run"), "{message}");

    // An unknown container, and a Pod that is not there, are refused with a sentence.
    subscribe(
        &mut socket,
        3,
        LogQuery {
            container: Some("nope".into()),
            ..query(&ns, "writer")
        },
    )
    .await;
    let ServerMessage::Refused { id: 3, message } = receive(&mut socket).await else {
        panic!("refused");
    };
    assert_eq!(message, "Pod writer has no container named nope.");
    subscribe(&mut socket, 4, query(&ns, "ghost")).await;
    let ServerMessage::Refused { id: 4, message } = receive(&mut socket).await else {
        panic!("refused");
    };
    assert_eq!(
        message,
        format!("Pod ghost does not exist in namespace {ns}.")
    );
}

#[tokio::test]
async fn the_previous_run_shows_what_the_container_wrote_before_it_exited() {
    let client = admin().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-previous").await;
    // Each run writes when it started, then fails; kubelet restarts it.
    run_pod(
        &client,
        &ns,
        "crasher",
        r#"echo "run started $(date +%s%N)"; sleep 2; echo "exiting with 1"; exit 1"#,
    )
    .await;
    until_running(&client, &ns, "crasher", 1).await;

    let mut socket = connect(&origin, None).await;
    subscribe(
        &mut socket,
        1,
        LogQuery {
            previous: true,
            tail_lines: None,
            ..query(&ns, "crasher")
        },
    )
    .await;
    let ServerMessage::LogOpened { containers, .. } = receive(&mut socket).await else {
        panic!("opened");
    };
    assert!(containers.first().is_some_and(|c| c.restarts >= 1));
    let mut lines = Vec::new();
    let ended = loop {
        match receive(&mut socket).await {
            ServerMessage::Log { lines: more, .. } => lines.extend(more),
            ServerMessage::LogEnded { message, .. } => break message,
            other => panic!("lines or the end expected, got {other:?}"),
        }
    };
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("run started "), "{lines:?}");
    assert_eq!(lines[1], "exiting with 1");
    assert!(ended.contains("previous run"), "{ended}");
}

#[tokio::test]
async fn a_person_without_pods_log_is_refused_with_a_sentence() {
    let admin = admin().await;
    let ns = crate::kit::fresh_namespace(&admin, "logs-refused").await;
    run_pod(&admin, &ns, "quiet", "sleep 3600").await;
    // A ServiceAccount that may read Pods, but not their logs.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), &ns);
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "viewer"}})).expect("sa"),
        )
        .await
        .expect("service account");
    portico_control_plane::apply::apply_all(
        &admin,
        vec![
            serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "pod-viewer", "namespace": ns},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]
            }))
            .expect("role"),
            serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "pod-viewer", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-viewer"},
                "subjects": [{"kind": "ServiceAccount", "name": "viewer", "namespace": ns}]
            }))
            .expect("binding"),
        ],
    )
    .await
    .expect("RBAC applies");
    let who = format!("system:serviceaccount:{ns}:viewer");
    crate::kit::until_subject_may(&admin, (&who, &[]), "get", ("", "pods"), Some(&ns)).await;
    let request: TokenRequest =
        serde_json::from_value(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}))
            .expect("token request");
    let token = accounts
        .create_token_request("viewer", &PostParams::default(), &request)
        .await
        .expect("token")
        .status
        .expect("status")
        .token;

    let (origin, _state) = token_mode_portal(&admin, None).await;
    let signed_in = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
        .post(format!("{origin}/auth/login"))
        .header("origin", &origin)
        .form(&[("token", token.as_str())])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303);
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_string();

    let mut socket = connect(&origin, Some(&cookie)).await;
    subscribe(&mut socket, 1, query(&ns, "quiet")).await;
    let ServerMessage::Refused { id: 1, message } = receive(&mut socket).await else {
        panic!("refused");
    };
    assert_eq!(
        message,
        format!("You may not read logs of pods in namespace {ns} (pods/log get).")
    );
}

/// A container writing as fast as it can: what reaches the page comes in messages of
/// at most 64 KiB, and the rest is reported as skipped lines rather than buffered. (The
/// rate itself, 256 KiB at once then 128 KiB/s, is checked on a paused clock in
/// `watch::log_flow`'s tests: measured here, a test that stalls reads a burst.)
#[tokio::test]
async fn a_flooding_container_is_sent_within_the_bound_and_the_rest_skipped() {
    let client = admin().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-flood").await;
    // Usually after the view opened, 6 MB of 100-byte lines as fast as it can, then
    // idles. The view asks for the whole log, so every line counts in either order.
    run_pod(
        &client,
        &ns,
        "flood",
        &format!(
            "sleep 8; yes {} | head -n 60000; echo flood-done; sleep 3600",
            "x".repeat(99)
        ),
    )
    .await;
    until_running(&client, &ns, "flood", 0).await;
    let mut socket = connect(&origin, None).await;
    let whole_log = LogQuery {
        tail_lines: None,
        ..query(&ns, "flood")
    };
    subscribe(&mut socket, 1, whole_log).await;
    assert!(matches!(
        receive(&mut socket).await,
        ServerMessage::LogOpened { .. }
    ));
    let mut start = None;
    let (mut bytes, mut lines, mut skipped, mut largest) = (0usize, 0usize, 0u64, 0usize);
    loop {
        let (message, size) = receive_sized(&mut socket).await.expect("open");
        let ServerMessage::Log {
            lines: batch,
            skipped: s,
            ..
        } = message
        else {
            panic!("lines expected, got {message:?}");
        };
        if start.is_none() {
            start = Some(Instant::now());
        }
        bytes += batch.iter().map(|l| l.len() + 1).sum::<usize>();
        lines += batch.len();
        skipped += s;
        largest = largest.max(size);
        if batch.iter().any(|l| l == "flood-done") {
            break;
        }
    }
    let elapsed = start.map(|s| s.elapsed()).unwrap_or_default();
    eprintln!(
        "flood: {lines} lines ({bytes} bytes) sent in {:.2} s, {skipped} skipped, largest message {largest} bytes; {:.0} lines/s",
        elapsed.as_secs_f64(),
        lines as f64 / elapsed.as_secs_f64().max(0.001),
    );
    assert!(
        largest <= 64 * 1024 + 64 * 1024 / 8,
        "a message of {largest} bytes"
    );
    assert!(skipped > 0, "a flood is skipped, not buffered");
    assert_eq!(lines as u64 + skipped, 60_001, "every line sent or counted");
}

#[tokio::test]
async fn a_log_opened_before_its_container_runs_follows_it_once_it_does() {
    let client = admin().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-early").await;
    // The view opens as the Pod is made, as a Stack's page opens its new Pod's log:
    // kubelet answers a follow of a container that is not running yet with an empty,
    // finished log, which must not end the view while the container then runs.
    run_pod(
        &client,
        &ns,
        "early",
        "i=0; while true; do echo \"line $i\"; i=$((i+1)); sleep 0.3; done",
    )
    .await;
    let mut socket = connect(&origin, None).await;
    subscribe(&mut socket, 1, query(&ns, "early")).await;
    let mut seen = 0;
    while seen < 5 {
        match receive(&mut socket).await {
            ServerMessage::Log { id: 1, lines, .. } => seen += lines.len(),
            ServerMessage::LogEnded { id: 1, message } => panic!("ended: {message}"),
            // Opened, and "not started yet" while the container is created.
            _ => {}
        }
    }
}

/// The attack of a revoked token (`scripts/attack.sh`): a person signs in with a
/// ServiceAccount token, opens a log view and a table, and their ServiceAccount is
/// deleted. The API server now refuses the token (401): at the next re-check both
/// views end, and the session's cookie no longer opens anything.
#[tokio::test]
async fn attack_a_deleted_service_accounts_views_end_and_its_session_with_them() {
    let admin = admin().await;
    let ns = crate::kit::fresh_namespace(&admin, "logs-revoked").await;
    run_pod(
        &admin,
        &ns,
        "ticker",
        "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done",
    )
    .await;
    until_running(&admin, &ns, "ticker", 0).await;
    let token = crate::kit::account_token(&admin, &ns, "leaver").await;
    crate::kit::grant(
        &admin,
        &ns,
        "pod-reader",
        ("", "pods"),
        &["get", "list", "watch"],
        "leaver",
    )
    .await;
    crate::kit::grant(
        &admin,
        &ns,
        "log-reader",
        ("", "pods/log"),
        &["get"],
        "leaver",
    )
    .await;
    let limits = portico_server::live::budgets::limits::LiveLimits {
        recheck: Duration::from_secs(1),
        ..Default::default()
    };
    let (origin, _state) = token_mode_portal(&admin, Some(limits)).await;
    let cookie = crate::kit::sign_in(&origin, &token).await;
    let mut socket = connect(&origin, Some(&cookie)).await;
    subscribe(&mut socket, 1, query(&ns, "ticker")).await;
    subscribe_pods_table(&mut socket, 2, &ns).await;
    // Both views are live: the table's snapshot and a log line arrive.
    let (mut table_live, mut log_live) = (false, false);
    while !(table_live && log_live) {
        match receive(&mut socket).await {
            ServerMessage::Snapshot { id: 2, .. } => table_live = true,
            ServerMessage::Log { id: 1, lines, .. } if !lines.is_empty() => log_live = true,
            ServerMessage::LogOpened { id: 1, .. } | ServerMessage::Rows { id: 2, .. } => {}
            other => panic!("before the revocation: {other:?}"),
        }
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), &ns);
    accounts
        .delete("leaver", &Default::default())
        .await
        .expect("the ServiceAccount is deleted");
    // Each view ends with a sentence, or the socket closes with the session; log
    // lines and table changes may still arrive until the next re-check.
    // Without the fix they never end: the wait is bounded so that fails, not hangs.
    let both_end = async {
        let (mut table_ended, mut log_ended) = (false, false);
        while !(table_ended && log_ended) {
            let Some((message, _)) = receive_sized(&mut socket).await else {
                return;
            };
            match message {
                ServerMessage::Refused { id: 2, .. } | ServerMessage::Problem { id: 2, .. } => {
                    table_ended = true
                }
                ServerMessage::Refused { id: 1, .. } | ServerMessage::LogEnded { id: 1, .. } => {
                    log_ended = true
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(START_WAIT, both_end)
        .await
        .expect("both views end once the token is refused");
    // The session ended too: its cookie opens nothing.
    let after = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
        .get(format!(
            "{origin}/api/live/table?group=&version=v1&plural=pods&namespace={ns}"
        ))
        .header("cookie", &cookie)
        .send()
        .await
        .expect("an answer");
    assert_eq!(after.status().as_u16(), 401, "the session still opens");
}

/// The attack of a log flood (`scripts/attack.sh`), on the real node against the
/// `portico` binary as a process of its own: a container writes empty lines as fast as
/// it can (`yes ''`), and one person opens 62 views of it over 2 sockets and reads them
/// slowly. What the views hold is set aside in that person's memory budget (16 MiB
/// here), so past it views are refused, and the server's resident memory grows by
/// less than three times the budget; meanwhile another person's log and table stay live.
#[tokio::test]
async fn attack_one_persons_log_flood_stays_within_their_memory_budget() {
    const BUDGET_MIB: usize = 16;
    let _heavy = crate::kit::REAL_NODE_HEAVY.lock().await;
    let admin = admin().await;
    let ns = crate::kit::fresh_namespace(&admin, "logs-budget").await;
    run_pod(&admin, &ns, "flood", "yes ''").await;
    run_pod(
        &admin,
        &ns,
        "ticker",
        "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.05; done",
    )
    .await;
    until_running(&admin, &ns, "flood", 0).await;
    until_running(&admin, &ns, "ticker", 0).await;
    let mut tokens = Vec::new();
    for who in ["greedy", "ada"] {
        tokens.push(crate::kit::account_token(&admin, &ns, who).await);
        crate::kit::grant(
            &admin,
            &ns,
            &format!("pods-{who}"),
            ("", "pods"),
            &["get", "list", "watch"],
            who,
        )
        .await;
        crate::kit::grant(
            &admin,
            &ns,
            &format!("logs-{who}"),
            ("", "pods/log"),
            &["get"],
            who,
        )
        .await;
    }
    let (origin, mut portico, pid) = crate::kit::process::token_mode_portico(
        std::path::Path::new(env!("CARGO_BIN_EXE_portico")),
        TestCluster::shared_real().admin_kubeconfig(),
        &["--max-live-mib-per-person", &BUDGET_MIB.to_string()],
    )
    .await;
    let greedy = crate::kit::sign_in(&origin, &tokens[0]).await;
    let ada = crate::kit::sign_in(&origin, &tokens[1]).await;
    let before = crate::kit::rss_mb(pid, "VmRSS:");

    // 62 views of the flood over 2 sockets, opened and then read one message at a time.
    let mut flooders = vec![
        connect(&origin, Some(&greedy)).await,
        connect(&origin, Some(&greedy)).await,
    ];
    for id in 0..62u32 {
        let whole = LogQuery {
            tail_lines: None,
            ..query(&ns, "flood")
        };
        subscribe(&mut flooders[(id % 2) as usize], id, whole).await;
    }
    let mut theirs = connect(&origin, Some(&ada)).await;
    subscribe(&mut theirs, 1, query(&ns, "ticker")).await;
    subscribe_pods_table(&mut theirs, 2, &ns).await;
    // Ada's view paces the test: for each message she gets, the flooder reads what is
    // there (one per socket). Until she has 200 ticks and her table, the flood runs
    // against the bound.
    let (mut ticks, mut table_live, mut refused, mut peak) = (0usize, false, 0usize, before);
    while ticks < 200 || !table_live {
        match receive(&mut theirs).await {
            ServerMessage::Log { id: 1, lines, .. } => ticks += lines.len(),
            ServerMessage::Snapshot { id: 2, .. } => table_live = true,
            ServerMessage::LogEnded { id: 1, message }
            | ServerMessage::Refused { id: 1, message } => {
                panic!("the other person's log ended during the flood: {message}")
            }
            _ => {}
        }
        // What the flooder's sockets hold now, one message each, without waiting: its
        // views may all be quiet (refused, or following again after a break).
        for socket in &mut flooders {
            let ready = futures::FutureExt::now_or_never(socket::next_frame(socket)).flatten();
            let refusal = match ready {
                Some(socket::Frame::Text(text)) => serde_json::from_str(&text).ok(),
                _ => None,
            };
            if let Some(ServerMessage::Refused { message, .. }) = refusal {
                assert!(message.contains(&format!("{BUDGET_MIB} MiB")), "{message}");
                refused += 1;
            }
        }
        peak = peak.max(crate::kit::rss_mb(pid, "VmRSS:"));
    }
    // Refusals still waiting on the flooder's sockets count too.
    for socket in &mut flooders {
        while refused == 0 {
            match futures::FutureExt::now_or_never(socket::next_frame(socket)).flatten() {
                Some(socket::Frame::Text(text)) => {
                    if let Ok(ServerMessage::Refused { message, .. }) = serde_json::from_str(&text)
                    {
                        assert!(message.contains(&format!("{BUDGET_MIB} MiB")), "{message}");
                        refused += 1;
                    }
                }
                Some(socket::Frame::Binary(_)) => {}
                None => break,
            }
        }
    }
    let grown = peak - before;
    eprintln!(
        "log flood: 62 views of `yes ''` by one person, {refused} refused at the {BUDGET_MIB} MiB budget; resident memory {before:.0} MB before, peak {peak:.0} MB (+{grown:.0} MB); the other person's log and table live"
    );
    assert!(refused > 0, "views past the budget are refused");
    assert!(
        grown < (3 * BUDGET_MIB) as f64,
        "resident memory grew by {grown:.0} MB, more than three times the {BUDGET_MIB} MiB budget"
    );
    portico.kill().await.expect("portico stops");
    // `yes` at full speed costs the node for as long as it runs.
    crate::kit::stop_pods(&admin, &ns).await;
    crate::kit::delete_namespace(&admin, &ns).await;
}

/// A workload's log (topic `workload_logs`): a Deployment of 3 replicas writing
/// numbered lines, scaled to 5 and back to 2 while the view is open. Every Pod's
/// lines arrive tagged with it, new Pods are followed and gone ones noted, and no line
/// comes twice.
#[tokio::test]
async fn a_workloads_log_follows_every_pod_as_it_scales_and_shows_no_line_twice() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::{Patch, PatchParams};
    use std::collections::BTreeMap;

    let client = admin().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-workload").await;
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": IMAGE, "imagePullPolicy": "Never",
                        "command": ["sh", "-c",
                            "i=0; while true; do echo \"line $i\"; i=$((i+1)); sleep 0.3; done"]}]}}}
    }))
    .expect("deployment");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    crate::kit::create_soon(&deployments, &deployment).await;

    let mut socket = connect(&origin, None).await;
    subscribe_workload(&mut socket, &ns, "app=web", Some(5)).await;
    assert!(
        matches!(
            receive(&mut socket).await,
            ServerMessage::LogOpened { id: 1, .. }
        ),
        "the view opens"
    );

    let mut seen = Seen::default();
    // Three Pods, each several lines.
    seen.read_until(&mut socket, |s| s.writing(3)).await;
    let scale = async |replicas: i32| {
        deployments
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await
            .expect("scaled");
    };
    scale(5).await;
    seen.read_until(&mut socket, |s| s.writing(5)).await;
    assert_eq!(seen.numbers.len(), 5, "five Pods followed: {seen:?}");
    scale(2).await;
    seen.read_until(&mut socket, |s| s.gone.len() >= 3).await;
    // The two left go on.
    let counts: BTreeMap<String, usize> = (seen.numbers.iter())
        .map(|(pod, n)| (pod.clone(), n.len()))
        .collect();
    seen.read_until(&mut socket, |s| {
        (s.numbers.iter())
            .filter(|(pod, _)| !s.gone.contains(*pod))
            .all(|(pod, lines)| lines.len() >= counts[pod] + 3)
    })
    .await;
    assert_eq!(
        seen.numbers.len() - seen.gone.len(),
        2,
        "two Pods left: {seen:?}"
    );
    for (pod, lines) in &seen.numbers {
        assert!(
            lines.windows(2).all(|w| w[1] == w[0] + 1),
            "{pod}'s lines, each once and in order: {lines:?}"
        );
    }
}

/// What a workload's log view has shown: each Pod's numbers as they arrived, and the
/// Pods noted as gone.
#[derive(Debug, Default)]
struct Seen {
    numbers: std::collections::BTreeMap<String, Vec<u64>>,
    gone: std::collections::BTreeSet<String>,
}

impl Seen {
    /// Whether `pods` Pods have each written several lines.
    fn writing(&self, pods: usize) -> bool {
        self.numbers.values().filter(|n| n.len() >= 3).count() >= pods
    }

    /// Reads view 1's lines until `done` says so.
    async fn read_until(&mut self, socket: &mut Socket, done: impl Fn(&Self) -> bool) {
        use portico_core::live::tagged_line;
        let deadline = Instant::now() + START_WAIT;
        while !done(self) {
            assert!(Instant::now() < deadline, "so far: {self:?}");
            match receive(socket).await {
                ServerMessage::Log { id: 1, lines, .. } => {
                    for line in &lines {
                        let parts = tagged_line::parse(line)
                            .unwrap_or_else(|| panic!("a tagged line: {line:?}"));
                        match parts.container {
                            Some(container) => {
                                assert_eq!(container, "app");
                                let n = number(parts.text)
                                    .unwrap_or_else(|| panic!("a numbered line: {line:?}"));
                                self.numbers
                                    .entry(parts.pod.to_string())
                                    .or_default()
                                    .push(n);
                            }
                            None if parts.text.starts_with("is gone") => {
                                self.gone.insert(parts.pod.to_string());
                            }
                            None => {}
                        }
                    }
                }
                ServerMessage::Problem { .. } => {}
                other => panic!("lines expected, got {other:?}"),
            }
        }
    }
}

/// A workload's log follows a container that stops and starts again (kubelet restarts
/// it): the new run's lines come, after a note, and no run's lines come twice.
#[tokio::test]
async fn a_workloads_log_follows_a_restarted_container_and_shows_each_run_once() {
    use portico_core::live::tagged_line;
    let client = admin().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "logs-restart").await;
    run_labelled_pod(
        &client,
        &ns,
        ("crasher", json!({"app": "crash"})),
        r#"echo "run $(date +%s%N) begins"; sleep 2; echo "run ends"; exit 1"#,
    )
    .await;
    let mut socket = connect(&origin, None).await;
    subscribe_workload(&mut socket, &ns, "app=crash", None).await;
    let (mut runs, mut notes) = (Vec::<String>::new(), Vec::<String>::new());
    let deadline = Instant::now() + START_WAIT;
    while runs.len() < 2 {
        assert!(
            Instant::now() < deadline,
            "runs so far: {runs:?}, notes: {notes:?}"
        );
        if let ServerMessage::Log { id: 1, lines, .. } = receive(&mut socket).await {
            for line in &lines {
                let parts = tagged_line::parse(line).unwrap_or_else(|| panic!("tagged: {line:?}"));
                match parts.container {
                    Some(_) if parts.text.ends_with("begins") => runs.push(parts.text.to_string()),
                    Some(_) => {}
                    None => notes.push(parts.text.to_string()),
                }
            }
        }
    }
    let mut distinct = runs.clone();
    distinct.dedup();
    assert_eq!(distinct, runs, "each run's lines once: {runs:?}");
    assert!(
        notes.iter().any(|n| n.starts_with("following app again")),
        "the new run is followed, and said: {notes:?}"
    );
}
