//! People act as themselves, against a real kube-apiserver, each signed in with their
//! own token: a viewer (read-only in one namespace) cannot create and cannot join a
//! feed of another namespace even when one is running; an editor can create; identity
//! headers name no one. The token only ever travels in a sealed cookie.
use futures::StreamExt;
use portico_core::live::protocol::{ClientMessage, ServerMessage, Topic};
use portico_core::table::wire::TableQuery;
use std::time::Duration;

use crate::kit::socket::{self, Socket};
use kube::api::Api;
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_server::live::budgets::limits::LiveLimits;
use portico_server::web::state::AppState;
use serde_json::json;

const STACKS: (&str, &str) = ("portico.dev", "stacks");

/// Portico in token mode.
struct Portal {
    base: String,
    state: AppState,
}

async fn serve(client: &kube::Client, live: Option<LiveLimits>) -> Portal {
    let (base, state) = crate::kit::serve_token_mode(client, live).await;
    Portal { base, state }
}

impl Portal {
    /// A new ServiceAccount `name` in `ns`, signed in: its session cookie.
    async fn person(&self, admin: &kube::Client, ns: &str, name: &str) -> String {
        crate::kit::signed_in_account(admin, &self.base, ns, name).await
    }
}

/// The headers sending `session` (a cookie's `name=value`).
fn with_session(session: &str) -> [(&str, &str); 1] {
    [("cookie", session)]
}

fn stack(ns: &str, name: &str) -> String {
    json!({"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
           "metadata": {"name": name, "namespace": ns}, "spec": {"choice": "tomcat"}})
    .to_string()
}

/// Calls the submit server function as whoever `headers` say.
async fn submit(
    portal: &Portal,
    headers: &[(&str, &str)],
    object: String,
) -> (u16, serde_json::Value) {
    submit_with(portal, headers, object, false).await
}

/// Calls the submit server function as whoever `headers` say, as a dry run or not.
async fn submit_with(
    portal: &Portal,
    headers: &[(&str, &str)],
    object: String,
    dry_run: bool,
) -> (u16, serde_json::Value) {
    let object: serde_json::Value = serde_json::from_str(&object).expect("an object");
    let mut request = reqwest::Client::new()
        .post(format!("{}/api/submit", portal.base))
        .header("origin", &portal.base)
        .json(&json!({"object": object, "dry_run": dry_run}));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("submit");
    let status = response.status().as_u16();
    let body = response.text().await.expect("body");
    (status, serde_json::from_str(&body).unwrap_or(json!(body)))
}

async fn live_table(portal: &Portal, headers: &[(&str, &str)], ns: &str) -> u16 {
    let mut request = reqwest::Client::new().get(format!(
        "{}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}",
        portal.base
    ));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request.send().await.expect("live table").status().as_u16()
}

#[tokio::test]
async fn each_person_acts_as_themselves() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "team").await;
    let other = crate::kit::fresh_namespace(&admin, "other").await;
    let reading = ["get", "list", "watch"];
    crate::kit::grant(&admin, &team, "stack-viewer", STACKS, &reading, "viewer").await;
    let editing = [
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    crate::kit::grant(&admin, &team, "stack-editor", STACKS, &editing, "editor").await;
    let portal = serve(&admin, None).await;
    let viewer_session = portal.person(&admin, &team, "viewer").await;
    let viewer = with_session(&viewer_session);
    let editor_session = portal.person(&admin, &team, "editor").await;
    let editor = with_session(&editor_session);

    let (status, outcome) = submit(&portal, &viewer, stack(&team, "by-viewer")).await;
    assert_eq!(status, 200);
    assert_eq!(outcome["Rejected"]["code"], 403, "{outcome}");
    let named = format!("\"{}\"", crate::kit::account_user(&team, "viewer"));
    assert!(
        outcome["Rejected"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&named),
        "{outcome}"
    );

    let (status, outcome) = submit(&portal, &editor, stack(&team, "by-editor")).await;
    assert_eq!(status, 200);
    assert!(outcome.get("Accepted").is_some(), "{outcome}");
    let stacks: Api<portico_server::reconcile::stack::Stack> =
        Api::namespaced(admin.clone(), &team);
    assert!(stacks.get_opt("by-editor").await.expect("get").is_some());
    assert!(stacks.get_opt("by-viewer").await.expect("get").is_none());

    // A feed of the other namespace is running (as the portal), yet the viewer may not join it.
    let _running = portal
        .state
        .live
        .hub
        .subscribe(TableQuery {
            group: "portico.dev".into(),
            version: "v1alpha1".into(),
            plural: "stacks".into(),
            namespace: Some(other.clone()),
            label_selector: None,
            field_selector: None,
            columns: None,
        })
        .expect("within the hub's limits");
    assert_eq!(live_table(&portal, &viewer, &other).await, 403);
    assert_eq!(live_table(&portal, &viewer, &team).await, 200);
    assert_eq!(
        live_table(&portal, &[], &team).await,
        401,
        "no identity, no feed"
    );
    // Headers naming someone are believed in no mode: only the API server says who.
    let editor_name = crate::kit::account_user(&team, "editor");
    let claimed = [
        ("x-forwarded-user", editor_name.as_str()),
        ("x-forwarded-groups", "system:masters"),
    ];
    assert_eq!(live_table(&portal, &claimed, &team).await, 401);
    let (status, _) = submit(&portal, &claimed, stack(&team, "by-headers")).await;
    assert_eq!(status, 401);
    assert!(stacks.get_opt("by-headers").await.expect("get").is_none());
}

/// People's requests share a few HTTP/2 connections, and each is still answered as its
/// own person: 250 watches take three connections (over HTTP/1.1 they took 250), every
/// watch sees the change, and someone without the right is refused on the connection
/// the other's watches use.
#[tokio::test]
async fn people_share_a_few_connections_and_each_is_still_themselves() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{PostParams, WatchEvent, WatchParams};
    use portico_server::cluster::caller::{Caller, Token};
    use portico_server::cluster::connections::STREAMS_PER_CONNECTION;
    use portico_server::cluster::pool::ClientPool;
    const WATCHES: usize = 250;
    let admin = TestCluster::shared().admin_client().await.expect("admin");
    let ns = crate::kit::fresh_namespace(&admin, "shared-connections").await;
    let reading = ["get", "list", "watch"];
    crate::kit::grant(
        &admin,
        &ns,
        "reader",
        ("", "configmaps"),
        &reading,
        "reader",
    )
    .await;
    let reader = crate::kit::account_token(&admin, &ns, "reader").await;
    let stranger = crate::kit::account_token(&admin, &ns, "stranger").await;
    let pool = ClientPool::new(
        Some(crate::kit::shared_config().await),
        admin.clone(),
        portico_server::portal_metrics::PORTAL.api_layer(),
    );
    let person = |token: String| Caller::Bearer {
        name: String::new(),
        token: Token(token),
    };
    let as_reader: Api<ConfigMap> =
        Api::namespaced(pool.for_caller(&person(reader)).expect("client"), &ns);
    // Only the test's own ConfigMap (the namespace also gets kube-root-ca.crt).
    let changes = WatchParams::default()
        .labels("written-by=the-test")
        .timeout(120)
        .disable_bookmarks();
    let mut watches = Vec::new();
    for _ in 0..WATCHES {
        let watch = as_reader
            .watch(&changes, "0")
            .await
            .expect("the reader may watch");
        watches.push(watch.boxed());
    }
    let (connections, streams) = pool.shared_connections();
    assert_eq!(streams, WATCHES, "every watch holds its stream");
    assert_eq!(connections, WATCHES.div_ceil(STREAMS_PER_CONNECTION));

    let as_stranger: Api<ConfigMap> =
        Api::namespaced(pool.for_caller(&person(stranger)).expect("client"), &ns);
    let refused = as_stranger.list(&Default::default()).await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(status)) if status.code == 403),
        "{refused:?}"
    );
    assert_eq!(
        pool.shared_connections().0,
        connections,
        "no new connection"
    );

    let written: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": "seen-by-all", "labels": {"written-by": "the-test"}
    }}))
    .expect("configmap");
    Api::<ConfigMap>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &written)
        .await
        .expect("create");
    for watch in &mut watches {
        let event = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .expect("every watch hears of the change in time");
        match event {
            Some(Ok(WatchEvent::Added(seen))) => {
                assert_eq!(seen.metadata.name.as_deref(), Some("seen-by-all"))
            }
            other => panic!("{other:?}"),
        }
    }
    drop(watches);
    assert_eq!(
        pool.shared_connections().1,
        0,
        "a watch ended gives back its stream"
    );
}

#[tokio::test]
async fn in_token_mode_the_token_lives_only_in_a_sealed_cookie() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "tok").await;
    let editing = ["get", "list", "watch", "create"];
    crate::kit::grant(&admin, &team, "stack-editor", STACKS, &editing, "deployer").await;
    let token = crate::kit::account_token(&admin, &team, "deployer").await;

    let portal = serve(&admin, None).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    let login = http
        .get(format!("{}/crds", portal.base))
        .send()
        .await
        .expect("page");
    assert_eq!(login.status().as_u16(), 303);
    // Signing in comes back to the page asked for.
    assert_eq!(login.headers()["location"], "/login?then=%2Fcrds");

    // Only to Portico's own pages: another site becomes the home page.
    let refused = http
        .post(format!("{}/auth/login", portal.base))
        .header("origin", &portal.base)
        .form(&[("token", "not-a-token"), ("then", "//evil.example/x")])
        .send()
        .await
        .expect("sign in");
    assert_eq!(refused.status().as_u16(), 401);
    let again = refused.text().await.expect("the form again");
    assert!(again.contains(r#"name="then" value="/""#), "{again}");
    assert!(!again.contains("evil.example"), "{again}");

    let signed_in = http
        .post(format!("{}/auth/login", portal.base))
        .header("origin", &portal.base)
        .form(&[("token", token.as_str()), ("then", "/crds")])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303);
    assert_eq!(signed_in.headers()["location"], "/crds");
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .to_string();
    for attribute in ["HttpOnly", "Secure", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    assert!(
        cookie.starts_with("__Host-portico_session="),
        "host-only prefix at the root: {cookie}"
    );
    assert!(!cookie.contains(&token), "the cookie is sealed");
    let session = cookie.split(';').next().expect("pair").to_string();

    let (status, outcome) = submit(
        &portal,
        &[("cookie", session.as_str())],
        stack(&team, "by-sa"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(outcome.get("Accepted").is_some(), "{outcome}");
    let (status, outcome) = submit(
        &portal,
        &[("cookie", session.as_str())],
        stack("default", "elsewhere"),
    )
    .await;
    assert_eq!(
        (status, outcome["Rejected"]["code"].clone()),
        (200, json!(403))
    );
    let (status, _) = submit(&portal, &[], stack(&team, "anonymous")).await;
    assert_eq!(status, 401);

    let page = http
        .get(format!("{}/crds", portal.base))
        .header("cookie", &session)
        .send()
        .await
        .expect("page");
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.expect("html");
    assert!(!html.contains(&token), "the token is never in a page");

    // A live socket of this session, with a table open, for the sign-out below.
    let mut socket = socket::connect(&portal.base, socket::LIVE, Some(&session), None).await;
    let subscribe = ClientMessage::Subscribe {
        id: 7,
        topic: Topic::Table {
            query: TableQuery {
                group: "portico.dev".into(),
                version: "v1alpha1".into(),
                plural: "stacks".into(),
                namespace: Some(team.clone()),
                label_selector: None,
                field_selector: None,
                columns: None,
            },
        },
        resume: None,
    };
    socket::send_json(&mut socket, &subscribe).await;
    let first = next(&mut socket).await;
    assert!(
        matches!(first, Some(ServerMessage::Snapshot { id: 7, .. })),
        "{first:?}"
    );

    // Signing out ends the session on the server: a copy of the cookie is dead too.
    let signed_out = http
        .post(format!("{}/auth/logout", portal.base))
        .header("origin", &portal.base)
        .header("cookie", &session)
        .send()
        .await
        .expect("sign out");
    assert_eq!(signed_out.status().as_u16(), 303);
    let (status, _) = submit(
        &portal,
        &[("cookie", session.as_str())],
        stack(&team, "after-sign-out"),
    )
    .await;
    assert_eq!(status, 401, "the copied cookie no longer opens");
    // The other tab's socket is told, then closed (within the socket's 2 s check).
    let mut told = None;
    while let Some(message) = next(&mut socket).await {
        if let ServerMessage::Refused { id: 7, message } = message {
            told = Some(message);
        }
    }
    let told = told.expect("the open view is told why it ends");
    assert!(told.contains("sign-in ended"), "{told}");

    // Guessing tokens at speed is refused before it reaches the API server.
    let mut outcomes = Vec::new();
    for _ in 0..40 {
        let attempt = http
            .post(format!("{}/auth/login", portal.base))
            .header("origin", &portal.base)
            .form(&[("token", "guess")])
            .send()
            .await
            .expect("sign in");
        outcomes.push(attempt.status().as_u16());
    }
    assert!(outcomes.contains(&429), "{outcomes:?}");
    assert!(
        outcomes.iter().all(|s| matches!(s, 401 | 429)),
        "{outcomes:?}"
    );
}

/// The socket's next message, past control frames; `None` once closed.
async fn next(socket: &mut Socket) -> Option<ServerMessage> {
    socket::next_json(socket, Duration::from_secs(10)).await
}

/// Runs the `portico` binary in local mode with `args` and `env`, against the test
/// cluster, with its output captured.
fn local_portico(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_portico"));
    command
        .args(args)
        .args(["--identity", "local", "--reconciler", "off"])
        .env("KUBECONFIG", TestCluster::shared().admin_kubeconfig())
        .env_remove("PORTICO_INSECURE_LOCAL_IDENTITY_FOR_EVERYONE")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

#[tokio::test]
async fn local_mode_never_hands_portals_identity_to_the_network() {
    let refused = |args: &'static [&'static str], env: &'static [(&'static str, &'static str)]| async move {
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            local_portico(args, env).output(),
        )
        .await
        .expect("portico exits by itself")
        .expect("portico runs");
        assert!(!out.status.success(), "{args:?} {env:?} must not serve");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // A non-loopback address (TEST-NET: nothing here could listen on it anyway).
    let why = refused(&["--listen", "192.0.2.1:3000"], &[]).await;
    assert!(why.contains("only on a loopback address"), "{why}");
    assert!(
        why.contains("--insecure-local-identity-for-everyone"),
        "{why}"
    );
    // Inside a cluster, even on loopback.
    let why = refused(
        &["--listen", "127.0.0.1:0"],
        &[("KUBERNETES_SERVICE_HOST", "10.96.0.1")],
    )
    .await;
    assert!(why.contains("inside a cluster"), "{why}");

    // The loudly named flag lifts the refusal, and the log says what it means.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = local_portico(
        &["--listen", &listen],
        &[
            ("KUBERNETES_SERVICE_HOST", "10.96.0.1"),
            ("PORTICO_INSECURE_LOCAL_IDENTITY_FOR_EVERYONE", "true"),
        ],
    )
    .spawn()
    .expect("portico starts");
    let http = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let health = http.get(format!("http://{listen}/healthz")).send().await;
        if health.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never served");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    child.start_kill().expect("stop portico");
    let out = child.wait_with_output().await.expect("output");
    let logs =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        logs.contains("EVERYONE WHO REACHES PORTICO ACTS AS PORTICO"),
        "{logs}"
    );
}

/// Opens a live table of Stacks in `ns` with `session` (a cookie), with `selector`.
async fn open_live(
    portal: &Portal,
    session: &str,
    ns: &str,
    selector: Option<&str>,
) -> reqwest::Response {
    let mut url = format!(
        "{}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}",
        portal.base
    );
    if let Some(selector) = selector {
        url.push_str("&label_selector=");
        url.push_str(&form_urlencoded::byte_serialize(selector.as_bytes()).collect::<String>());
    }
    reqwest::Client::new()
        .get(url)
        .header("cookie", session)
        .send()
        .await
        .expect("live table")
}

/// Reads a live stream until it ends, returning everything it sent; fails after 20 s.
async fn read_to_end(response: reqwest::Response, until: &str) -> String {
    use futures::StreamExt;
    let mut body = String::new();
    let mut chunks = response.bytes_stream();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        match tokio::time::timeout_at(deadline, chunks.next()).await {
            Ok(Some(Ok(chunk))) => {
                body.push_str(&String::from_utf8_lossy(&chunk));
                if until.is_empty() || !body.contains(until) {
                    continue;
                }
                return body;
            }
            Ok(None | Some(Err(_))) => return body,
            Err(_) => panic!("the stream neither ended nor sent {until:?}: {body}"),
        }
    }
}

#[tokio::test]
async fn live_views_are_bounded_per_person_and_a_withdrawn_permission_ends_them() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "bounded").await;
    for who in ["greedy", "other", "leaver"] {
        let role = format!("watch-{who}");
        crate::kit::grant(&admin, &team, &role, STACKS, &["get", "list", "watch"], who).await;
    }
    let limits = LiveLimits {
        streams_per_person: 3,
        feeds_per_person: 5,
        recheck: std::time::Duration::from_millis(300),
        ..LiveLimits::default()
    };
    let portal = serve(&admin, Some(limits)).await;
    let greedy = portal.person(&admin, &team, "greedy").await;
    let other = portal.person(&admin, &team, "other").await;
    let leaver = portal.person(&admin, &team, "leaver").await;

    // Three open views, then a clear refusal; someone else is unaffected.
    let mut held = Vec::new();
    for _ in 0..3 {
        let view = open_live(&portal, &greedy, &team, None).await;
        assert_eq!(view.status().as_u16(), 200);
        held.push(view);
    }
    let fourth = open_live(&portal, &greedy, &team, None).await;
    assert_eq!(fourth.status().as_u16(), 429);
    assert!(
        fourth
            .text()
            .await
            .expect("body")
            .contains("live views open")
    );
    assert_eq!(
        open_live(&portal, &other, &team, None)
            .await
            .status()
            .as_u16(),
        200
    );
    drop(held);

    // Distinct selectors start distinct upstream watches, which linger after their
    // viewer leaves: the fifth is the last one started for this person.
    let mut statuses = Vec::new();
    for i in 0..6 {
        let selector = format!("app=x{i}");
        let view = open_live(&portal, &greedy, &team, Some(&selector)).await;
        statuses.push(view.status().as_u16());
    }
    // One feed (no selector) still lingers from the first part.
    assert_eq!(statuses, [200, 200, 200, 200, 429, 429], "{statuses:?}");

    // Oversized selectors and invented namespaces start nothing.
    let long = format!("app in ({})", vec!["a"; 3000].join(","));
    assert_eq!(
        open_live(&portal, &other, &team, Some(&long))
            .await
            .status()
            .as_u16(),
        400
    );
    // Someone who may watch Stacks everywhere still cannot name a namespace that is not.
    apply::apply_all(
        &admin,
        vec![
            serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "stack-watcher-everywhere"},
                "rules": [{"apiGroups": ["portico.dev"], "resources": ["stacks"],
                           "verbs": ["get", "list", "watch"]}]
            }))
            .expect("role"),
            serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "stack-watcher-everywhere"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "stack-watcher-everywhere"},
                "subjects": [{"kind": "ServiceAccount", "name": "roamer", "namespace": team}]
            }))
            .expect("binding"),
        ],
    )
    .await
    .expect("cluster-wide watcher");
    let invented = "no-such-namespace-here";
    let roamer = crate::kit::account_user(&team, "roamer");
    crate::kit::until_subject_may(
        &admin,
        (&roamer, &[]),
        "watch",
        ("portico.dev", "stacks"),
        Some(invented),
    )
    .await;
    let roamer = portal.person(&admin, &team, "roamer").await;
    let missing = open_live(&portal, &roamer, invented, None).await;
    assert_eq!(missing.status().as_u16(), 404);

    // Withdrawing the permission ends the open view with a problem message.
    let view = open_live(&portal, &leaver, &team, None).await;
    assert_eq!(view.status().as_u16(), 200);
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(admin.clone(), &team);
    bindings
        .delete("watch-leaver", &Default::default())
        .await
        .expect("revoke");
    let body = read_to_end(view, "").await;
    assert!(body.contains("event: snapshot"), "{body}");
    assert!(body.contains("event: problem"), "{body}");
    // Whichever notices first, the periodic access review or the feed's own next
    // request, the view ends saying why (read_to_end returned: the stream ended).
    assert!(
        body.contains("withdrawn")
            || body.contains(&format!(
                "User \"{}\" cannot",
                crate::kit::account_user(&team, "leaver")
            )),
        "{body}"
    );
}

#[tokio::test]
async fn a_stack_asks_only_for_what_its_author_may_do() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "deputy").await;
    let creating = ["get", "list", "watch", "create"];
    crate::kit::grant(&admin, &team, "stack-creator", STACKS, &creating, "deputy").await;
    let policy = apply::read_documents(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/base/stack-policy.yaml"),
    )
    .expect("policy");
    apply::apply_all(&admin, policy)
        .await
        .expect("policy applies");
    let portal = serve(&admin, None).await;
    let deputy_session = portal.person(&admin, &team, "deputy").await;
    let deputy = with_session(&deputy_session);
    let asking = |name: &str, spec: serde_json::Value| {
        json!({"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
               "metadata": {"name": name, "namespace": team}, "spec": spec})
        .to_string()
    };
    let node_port = json!({"choice": "tomcat", "exposure": "NodePort"});

    // The API server loads a new policy in the background: dry runs pass until then.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let refusal = loop {
        let probe = asking("probe", node_port.clone());
        let (_, outcome) = submit_with(&portal, &deputy, probe, true).await;
        if outcome.get("Rejected").is_some() {
            break outcome;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never took effect"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    assert_eq!(refusal["Rejected"]["code"], 403, "{refusal}");
    let (_, outcome) = submit(&portal, &deputy, asking("open", node_port.clone())).await;
    assert!(
        outcome["Rejected"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("stacks/nodeport"),
        "{outcome}"
    );
    let (_, outcome) = submit(
        &portal,
        &deputy,
        asking("inside", json!({"choice": "tomcat"})),
    )
    .await;
    assert!(
        outcome.get("Accepted").is_some(),
        "ClusterIP needs nothing more: {outcome}"
    );

    // Extended resources are not the author's to hand out through a Stack.
    let gpus = json!({"choice": "tomcat", "resources": {"requests": {"nvidia.com/gpu": 8}}});
    let (_, outcome) = submit(&portal, &deputy, asking("gpus", gpus)).await;
    assert!(
        outcome["Rejected"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("only cpu, memory and ephemeral-storage"),
        "{outcome}"
    );

    // Past the catalog's ceilings: refused at admission, with a sentence naming it.
    let ceilings = [
        (
            json!({"choice": "mysql", "storage": "999999Ti", "replicas": 2}),
            "storage: 999999Ti is more than the catalog allows for mysql (20Gi)",
        ),
        (
            json!({"choice": "tomcat", "replicas": 10}),
            "replicas: 10 are more than the catalog allows for tomcat (5)",
        ),
        (
            json!({"choice": "tomcat", "resources": {"limits": {"cpu": 64}}}),
            "resources.limits: more than the catalog allows for tomcat",
        ),
        (
            json!({"choice": "tomcat", "resources": {"requests": {"memory": "1Ti"}}}),
            "resources.requests: more than the catalog allows for tomcat",
        ),
    ];
    for (i, (spec, says)) in ceilings.into_iter().enumerate() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let outcome = loop {
            let (_, outcome) = submit_with(
                &portal,
                &deputy,
                asking(&format!("big{i}"), spec.clone()),
                true,
            )
            .await;
            if outcome.get("Rejected").is_some() {
                break outcome;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the ceilings policy never refused {spec}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        };
        assert!(
            outcome["Rejected"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains(says),
            "{spec}: {outcome}"
        );
    }

    // Given the permission, the same request is admitted.
    apply::apply_all(
        &admin,
        vec![
            serde_json::from_value(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "deputy-nodeport", "namespace": team},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "portico-stack-nodeport"},
                "subjects": [{"kind": "ServiceAccount", "name": "deputy", "namespace": team}]
            }))
            .expect("binding"),
        ],
    )
    .await
    .expect("grant");
    let deputy_user = crate::kit::account_user(&team, "deputy");
    crate::kit::until_subject_may(
        &admin,
        (&deputy_user, &[]),
        "use",
        ("portico.dev", "stacks/nodeport"),
        Some(&team),
    )
    .await;
    let (_, outcome) = submit(&portal, &deputy, asking("open", node_port)).await;
    assert!(outcome.get("Accepted").is_some(), "{outcome}");
}

/// Submits `object` as a dry run until the API server's answer is a refusal whose
/// message contains `says` (a policy and new RBAC take effect in the background).
async fn refused_saying(
    portal: &Portal,
    headers: &[(&str, &str)],
    object: &str,
    says: &str,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (_, outcome) = submit_with(portal, headers, object.to_string(), true).await;
        let message = outcome["Rejected"]["message"].as_str().unwrap_or_default();
        if message.contains(says) {
            return outcome;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never refused with {says:?}: {outcome}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// `portico-stackbinding-access`, the policy a person's binding passes at admission.
async fn apply_binding_policy(admin: &kube::Client) {
    let policy = apply::read_documents(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../deploy/base/binding-policy.yaml"),
    )
    .expect("policy");
    apply::apply_all(admin, policy)
        .await
        .expect("policy applies");
}

#[tokio::test]
async fn a_binding_needs_the_right_to_change_the_workload_and_to_read_the_password() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "binder").await;
    let creating = ["get", "list", "watch", "create"];
    crate::kit::grant(
        &admin,
        &team,
        "binding-creator",
        ("portico.dev", "stackbindings"),
        &creating,
        "binder",
    )
    .await;
    apply_binding_policy(&admin).await;
    let portal = serve(&admin, None).await;
    let session = portal.person(&admin, &team, "binder").await;
    let binder = with_session(&session);
    let binding = json!({"apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
        "metadata": {"name": "app-db", "namespace": team},
        "spec": {"stack": "db", "workload": {"kind": "Deployment", "name": "app"}}})
    .to_string();

    // May make bindings, may not change the Deployment: refused, saying so.
    let outcome = refused_saying(
        &portal,
        &binder,
        &binding,
        &format!("you may not update deployments in namespace {team}"),
    )
    .await;
    assert_eq!(outcome["Rejected"]["code"], 403, "{outcome}");
    // May change it, may not read the password the binding hands over: refused too.
    crate::kit::grant(
        &admin,
        &team,
        "app-editor",
        ("apps", "deployments"),
        &["get", "update"],
        "binder",
    )
    .await;
    refused_saying(
        &portal,
        &binder,
        &binding,
        &format!("you may not read Secret db-credentials in namespace {team}"),
    )
    .await;
    // Both: admitted.
    crate::kit::grant(
        &admin,
        &team,
        "password-reader",
        ("", "secrets"),
        &["get"],
        "binder",
    )
    .await;
    let (_, outcome) = submit(&portal, &binder, binding).await;
    assert!(outcome.get("Accepted").is_some(), "{outcome}");
}

/// Calls the Bind button's server function as whoever `headers` say.
async fn bind_button(
    portal: &Portal,
    headers: &[(&str, &str)],
    binding: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/api/bind", portal.base))
        .header("origin", &portal.base)
        .json(&json!({"binding": binding}));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = request.send().await.expect("bind");
    let status = response.status().as_u16();
    let body = response.text().await.expect("body");
    (status, serde_json::from_str(&body).unwrap_or(json!(body)))
}

/// The Bind button: the workload first accepts the binding's variables (its annotation
/// `portico.dev/binding-prefixes`, written as the person: without it the reconciler's
/// admission lets no variable in), then the binding is made. Refused at either step,
/// it leaves nothing behind.
#[tokio::test]
async fn the_bind_button_has_the_workload_accept_the_variables_as_the_person_and_leaves_nothing_when_refused()
 {
    use k8s_openapi::api::apps::v1::Deployment;
    use kube::api::PostParams;
    use portico_server::reconcile::binding::kind::StackBinding;
    use portico_server::reconcile::stack::Stack;
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "bind-button").await;
    apply_binding_policy(&admin).await;
    let stack: Stack = serde_json::from_value(json!({"apiVersion": "portico.dev/v1alpha1",
        "kind": "Stack", "metadata": {"name": "db"}, "spec": {"choice": "mysql"}}))
    .expect("a Stack");
    Api::<Stack>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &stack)
        .await
        .expect("the Stack");
    let app: Deployment = serde_json::from_value(json!({"metadata": {"name": "app"},
        "spec": {"selector": {"matchLabels": {"app": "app"}},
            "template": {"metadata": {"labels": {"app": "app"}},
                "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}}}}))
    .expect("a Deployment");
    let deployments = Api::<Deployment>::namespaced(admin.clone(), &team);
    deployments
        .create(&PostParams::default(), &app)
        .await
        .expect("someone's Deployment");
    for (role, resource, verbs) in [
        (
            "binding-creator",
            ("portico.dev", "stackbindings"),
            &["get", "list", "watch", "create"][..],
        ),
        ("stack-reader", ("portico.dev", "stacks"), &["get"][..]),
        ("app-reader", ("apps", "deployments"), &["get"][..]),
    ] {
        crate::kit::grant(&admin, &team, role, resource, verbs, "binder").await;
    }
    let portal = serve(&admin, None).await;
    let session = portal.person(&admin, &team, "binder").await;
    let binder = with_session(&session);
    let binding = json!({"apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
        "metadata": {"name": "app-db", "namespace": team},
        "spec": {"stack": "db", "workload": {"kind": "Deployment", "name": "app"}}});
    let accepts = || async {
        deployments
            .get("app")
            .await
            .expect("the Deployment")
            .metadata
            .annotations
            .and_then(|a| a.get("portico.dev/binding-prefixes").cloned())
    };
    let bindings = Api::<StackBinding>::namespaced(admin.clone(), &team);

    // May not change the Deployment: refused at its first step, in words.
    let (status, body) = bind_button(&portal, &binder, &binding).await;
    assert!(
        status >= 400
            && body
                .to_string()
                .contains("to accept the binding's variables"),
        "{status} {body}"
    );
    assert_eq!(accepts().await, None);
    assert!(bindings.get_opt("app-db").await.expect("read").is_none());

    // May change it, may not read the password: the binding is refused (admission,
    // once the policy is in force) and the acceptance it made first is undone.
    crate::kit::grant(
        &admin,
        &team,
        "app-editor",
        ("apps", "deployments"),
        &["get", "update"],
        "binder",
    )
    .await;
    let unreadable = format!("you may not read Secret db-credentials in namespace {team}");
    refused_saying(&portal, &binder, &binding.to_string(), &unreadable).await;
    let (_, outcome) = bind_button(&portal, &binder, &binding).await;
    let message = outcome["Rejected"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&unreadable), "{outcome}");
    assert_eq!(accepts().await, None, "the acceptance is undone");
    assert!(bindings.get_opt("app-db").await.expect("read").is_none());

    // Both: the Deployment accepts MYSQL_ variables, and the binding is made.
    crate::kit::grant(
        &admin,
        &team,
        "password-reader",
        ("", "secrets"),
        &["get"],
        "binder",
    )
    .await;
    let (_, outcome) = bind_button(&portal, &binder, &binding).await;
    assert!(outcome.get("Accepted").is_some(), "{outcome}");
    assert_eq!(accepts().await.as_deref(), Some("MYSQL_"));
    assert!(bindings.get_opt("app-db").await.expect("read").is_some());
}

/// The attack of a moved binding (`scripts/attack.sh`): Bob may edit and delete the
/// namespace's StackBindings and change his own Deployment, not Alice's. Repointing
/// her binding from her `app` to his `bob-app` would have the reconciler take the
/// variables out of her `app` (a change he may not make): refused, as is deleting her
/// binding, and moving it between his own workloads is not.
#[tokio::test]
async fn attack_moving_or_deleting_someone_elses_binding_needs_the_right_to_change_their_workload()
{
    use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "moved").await;
    apply_binding_policy(&admin).await;
    let token = crate::kit::account_token(&admin, &team, "bob").await;
    let rbac = json!([
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "bob", "namespace": team},
         "rules": [
            {"apiGroups": ["portico.dev"], "resources": ["stackbindings"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": ["apps"], "resources": ["deployments"],
             "resourceNames": ["bob-app", "bob-other"], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["secrets"],
             "resourceNames": ["db-credentials"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "bob", "namespace": team},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bob"},
         "subjects": [{"kind": "ServiceAccount", "name": "bob", "namespace": team}]}
    ]);
    apply::apply_all(
        &admin,
        serde_json::from_value(rbac).expect("Bob's role and binding"),
    )
    .await
    .expect("RBAC applies");
    let bob_user = crate::kit::account_user(&team, "bob");
    crate::kit::until_subject_may(
        &admin,
        (&bob_user, &[]),
        "delete",
        ("portico.dev", "stackbindings"),
        Some(&team),
    )
    .await;
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("portico.dev", "v1alpha1", "StackBinding"),
        "stackbindings",
    );
    let binding = |name: &str, workload: &str| -> DynamicObject {
        serde_json::from_value(
            json!({"apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
            "metadata": {"name": name},
            "spec": {"stack": "db", "workload": {"kind": "Deployment", "name": workload}}}),
        )
        .expect("binding")
    };
    // Alice's binding, made by someone who may (here the administrator).
    let as_admin: Api<DynamicObject> = Api::namespaced_with(admin.clone(), &team, &resource);
    as_admin
        .create(&PostParams::default(), &binding("app-db", "app"))
        .await
        .expect("Alice's binding");
    let bob: Api<DynamicObject> =
        Api::namespaced_with(crate::kit::client_with_token(token).await, &team, &resource);
    let repoint = Patch::Merge(json!({"spec": {"workload": {"name": "bob-app"}}}));
    // The policy takes a moment to load: dry runs until it answers.
    let dry_run = PatchParams {
        dry_run: true,
        ..PatchParams::default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while bob.patch("app-db", &dry_run, &repoint).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never loaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let refused = |outcome: Result<_, kube::Error>, says: &str| match outcome {
        Err(kube::Error::Api(status)) => {
            assert!(
                status.code == 403 && status.message.contains(says),
                "{}",
                status.message
            )
        }
        other => panic!("admitted, expected a refusal saying {says:?}: {other:?}"),
    };
    refused(
        bob.patch("app-db", &PatchParams::default(), &repoint)
            .await
            .map(|_| ()),
        &format!(
            "moving this binding takes its variables out of Deployment app, and you may not update deployments in namespace {team}"
        ),
    );
    refused(
        bob.delete("app-db", &DeleteParams::default())
            .await
            .map(|_| ()),
        &format!(
            "unbinding a Stack from Deployment app changes it, and you may not update deployments in namespace {team}"
        ),
    );
    let kept = as_admin
        .get("app-db")
        .await
        .expect("Alice's binding is still there");
    assert_eq!(kept.data["spec"]["workload"]["name"], "app");
    // His own: made, moved between his workloads and deleted.
    bob.create(&PostParams::default(), &binding("bob-db", "bob-app"))
        .await
        .expect("Bob binds his own app");
    bob.patch(
        "bob-db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"workload": {"name": "bob-other"}}})),
    )
    .await
    .expect("Bob moves his binding between his own apps");
    bob.delete("bob-db", &DeleteParams::default())
        .await
        .expect("Bob unbinds his own app");
}

/// The binding picker asks the API server, as the person, about each workload: the one
/// they may update is offered first, the one they may not says why, and a Stack not
/// provisioned yet says so instead of offering variables.
#[tokio::test]
async fn the_binding_picker_offers_what_the_person_may_bind_and_says_why_not_of_the_rest() {
    use portico_server::web::backend::binding_offer::offer;
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "bind-pick").await;
    // Update on one Deployment only, by name. Made first: the RBAC authorizer sees
    // roles in order, so once the grants below are seen, so is this one.
    crate::kit::grant_rule(
        &admin,
        &ns,
        "binder-mine",
        json!({"apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["mine"], "verbs": ["update"]}),
        "binder",
    )
    .await;
    for (resource, verbs) in [
        (("portico.dev", "stacks"), &["get", "list"][..]),
        (("portico.dev", "stackbindings"), &["list"][..]),
        (("apps", "deployments"), &["list"][..]),
        (("apps", "statefulsets"), &["list"][..]),
    ] {
        let role = format!("binder-{}", resource.1);
        crate::kit::grant(&admin, &ns, &role, resource, verbs, "binder").await;
    }
    let deployment = |name: &str| -> k8s_openapi::api::apps::v1::Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}}}}))
        .expect("deployment")
    };
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(admin.clone(), &ns);
    for name in ["theirs", "mine"] {
        deployments
            .create(&Default::default(), &deployment(name))
            .await
            .expect("a Deployment");
    }
    let stack: portico_server::reconcile::stack::Stack = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "db"}, "spec": {"choice": "mysql"}}))
    .expect("stack");
    Api::<portico_server::reconcile::stack::Stack>::namespaced(admin.clone(), &ns)
        .create(&Default::default(), &stack)
        .await
        .expect("a Stack");
    let who = crate::kit::account_user(&ns, "binder");

    let token = crate::kit::account_token(&admin, &ns, "binder").await;
    let person = crate::kit::Person::new(&admin, &who, token).await;
    let offered = offer(&person.asker(), &ns, "db").await.expect("the offer");
    let targets: Vec<(String, Option<String>)> = offered
        .targets
        .iter()
        .map(|t| (format!("{} {}", t.kind, t.name), t.refused.clone()))
        .collect();
    assert_eq!(
        targets,
        [
            ("Deployment mine".to_string(), None),
            (
                "Deployment theirs".to_string(),
                Some("You may not update Deployment theirs, which binding changes.".to_string())
            ),
        ]
    );
    assert_eq!(
        offered.blocked.as_deref(),
        Some("Stack db has no endpoint yet: it is still being provisioned")
    );
}

/// The Provision form's namespaces: none for a person who may not list them (they
/// type theirs), and once they may, those they may create a Stack in first, as access
/// reviews made as them say.
#[tokio::test]
async fn the_provision_form_offers_first_the_namespaces_the_person_may_create_a_stack_in() {
    use portico_server::web::backend::stack_places::places;
    let admin = crate::kit::admin_with_stack_crd().await;
    let home = crate::kit::fresh_namespace(&admin, "place-home").await;
    let team = crate::kit::fresh_namespace(&admin, "place-team").await;
    let who = crate::kit::account_user(&home, "provisioner");
    let token = crate::kit::account_token(&admin, &home, "provisioner").await;
    let rbac = |doc: serde_json::Value| serde_json::from_value(doc).expect("RBAC object");
    let subject = json!([{"kind": "ServiceAccount", "name": "provisioner", "namespace": home}]);
    portico_control_plane::apply::apply_all(
        &admin,
        vec![
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "provision", "namespace": team},
                "rules": [{"apiGroups": ["portico.dev"], "resources": ["stacks"], "verbs": ["create"]}]})),
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "provision", "namespace": team},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "provision"},
                "subjects": subject})),
        ],
    )
    .await
    .expect("RBAC applies");
    crate::kit::until_subject_may(
        &admin,
        (&who, &[]),
        "create",
        ("portico.dev", "stacks"),
        Some(&team),
    )
    .await;
    let person = crate::kit::Person::new(&admin, &who, token).await;
    let asker = person.asker();
    assert_eq!(
        places(&asker).await.expect("no places, not an error"),
        [],
        "a person who may not list namespaces types theirs"
    );

    let lister = format!("portico-test-list-namespaces-{home}");
    portico_control_plane::apply::apply_all(
        &admin,
        vec![
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": lister},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]})),
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": lister},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": lister},
                "subjects": subject})),
        ],
    )
    .await
    .expect("RBAC applies");
    crate::kit::until_subject_may(&admin, (&who, &[]), "list", ("", "namespaces"), None).await;
    let offered = places(&asker).await.expect("the places");
    let open: Vec<&str> = (offered.iter())
        .filter(|p| p.may_create)
        .map(|p| p.namespace.as_str())
        .collect();
    assert_eq!(open, [team.as_str()], "only where the person may create");
    assert_eq!(offered[0].namespace, team, "and that one first");
    assert!(
        offered.iter().any(|p| p.namespace == home && !p.may_create),
        "the rest are offered, marked: {offered:?}"
    );
    for (kind, api) in [
        ("ClusterRoleBinding", "clusterrolebindings"),
        ("ClusterRole", "clusterroles"),
    ] {
        let gone: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
            admin.clone(),
            &kube::api::ApiResource {
                group: "rbac.authorization.k8s.io".into(),
                version: "v1".into(),
                api_version: "rbac.authorization.k8s.io/v1".into(),
                kind: kind.into(),
                plural: api.into(),
            },
        );
        gone.delete(&lister, &Default::default())
            .await
            .expect("the test's cluster-wide grant is removed");
    }
}

/// The palette's search, as the person: objects in the namespaces whose rules let them
/// list the kind, never others; where they may not list namespaces, in the one their
/// browser names; a query past the bound refused.
#[tokio::test]
async fn the_palette_finds_only_what_the_person_may_list() {
    use portico_core::find::{FoundObjects, MAX_QUERY_LEN};
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "find-team").await;
    let other = crate::kit::fresh_namespace(&admin, "find-other").await;
    for ns in [&team, &other] {
        let map: k8s_openapi::api::core::v1::ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("needle-{ns}")}}))
                .expect("configmap");
        Api::namespaced(admin.clone(), ns)
            .create(&Default::default(), &map)
            .await
            .expect("a ConfigMap");
    }
    let listing = ["get", "list"];
    for account in ["finder", "lister"] {
        let role = format!("{account}-configmaps");
        crate::kit::grant(&admin, &team, &role, ("", "configmaps"), &listing, account).await;
    }
    let portal = serve(&admin, None).await;
    let find = |session: String, form: Vec<(&'static str, String)>| {
        let base = portal.base.clone();
        async move {
            let response = reqwest::Client::new()
                .post(format!("{base}/api/find"))
                .header("cookie", session)
                .form(&form)
                .send()
                .await
                .expect("find");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        }
    };
    let found = |(status, body): (u16, String)| -> Vec<String> {
        assert_eq!(status, 200, "{body}");
        let found: FoundObjects = serde_json::from_str(&body).expect("found objects");
        found
            .objects
            .iter()
            .map(|o| {
                format!(
                    "{} {}/{}",
                    o.kind,
                    o.namespace.as_deref().unwrap_or("-"),
                    o.name
                )
            })
            .collect()
    };

    // The finder may not list namespaces: without one named, nothing, and why.
    let finder = portal.person(&admin, &team, "finder").await;
    let (status, body) = find(finder.clone(), vec![("query", "needle".into())]).await;
    assert_eq!(status, 200, "{body}");
    let nothing: FoundObjects = serde_json::from_str(&body).expect("found objects");
    assert_eq!(nothing.objects, []);
    assert!(
        nothing
            .unseen
            .iter()
            .any(|s| s.contains("nor list namespaces")),
        "{nothing:?}"
    );
    let in_team = vec![("query", "needle".into()), ("namespace", team.clone())];
    assert_eq!(
        found(find(finder.clone(), in_team).await),
        [format!("ConfigMap {team}/needle-{team}")]
    );
    let in_other = vec![("query", "needle".into()), ("namespace", other.clone())];
    assert_eq!(
        found(find(finder.clone(), in_other).await),
        Vec::<String>::new()
    );
    let long = vec![("query", "n".repeat(MAX_QUERY_LEN + 1))];
    assert_eq!(find(finder.clone(), long).await.0, 400);
    let crafted = vec![
        ("query", "needle".into()),
        ("namespace", "../kube-system".into()),
    ];
    assert_eq!(find(finder, crafted).await.0, 400);

    // The lister may list namespaces: each one's rules decide where it looks.
    let lister_user = crate::kit::account_user(&team, "lister");
    let rbac = |doc: serde_json::Value| serde_json::from_value(doc).expect("RBAC object");
    let name = format!("portico-test-find-namespaces-{team}");
    apply::apply_all(
        &admin,
        vec![
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]})),
            rbac(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": "lister", "namespace": team}]})),
        ],
    )
    .await
    .expect("RBAC applies");
    crate::kit::until_subject_may(
        &admin,
        (&lister_user, &[]),
        "list",
        ("", "namespaces"),
        None,
    )
    .await;
    let lister = portal.person(&admin, &team, "lister").await;
    assert_eq!(
        found(find(lister, vec![("query", "needle".into())]).await),
        [format!("ConfigMap {team}/needle-{team}")]
    );
}

/// "What may I do here": the person's own rules in a namespace, each kind by verb,
/// grants on some names apart, subresources; nothing of another namespace.
#[tokio::test]
async fn what_may_i_do_here_answers_each_kind_by_verb_as_the_person() {
    use portico_core::access::NamespaceAccess;
    let admin = crate::kit::admin_with_stack_crd().await;
    let team = crate::kit::fresh_namespace(&admin, "access-team").await;
    let other = crate::kit::fresh_namespace(&admin, "access-other").await;
    crate::kit::grant_rule(
        &admin,
        &team,
        "asker-web",
        json!({"apiGroups": ["apps"], "resources": ["deployments"],
            "resourceNames": ["web"], "verbs": ["get", "update"]}),
        "asker",
    )
    .await;
    crate::kit::grant_rule(
        &admin,
        &team,
        "asker-exec",
        json!({"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}),
        "asker",
    )
    .await;
    crate::kit::grant(
        &admin,
        &team,
        "asker-pods",
        ("", "pods"),
        &["get", "list", "watch"],
        "asker",
    )
    .await;
    let portal = serve(&admin, None).await;
    let session = portal.person(&admin, &team, "asker").await;
    let ask = |namespace: String| {
        let (base, session) = (portal.base.clone(), session.clone());
        async move {
            let response = reqwest::Client::new()
                .post(format!("{base}/api/access"))
                .header("cookie", session)
                .form(&[("namespace", namespace)])
                .send()
                .await
                .expect("access");
            let status = response.status().as_u16();
            (status, response.text().await.expect("body"))
        }
    };
    let read = |(status, body): (u16, String)| -> NamespaceAccess {
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).expect("namespace access")
    };
    let access = read(ask(team.clone()).await);
    let row = |kind: &str| {
        access
            .kinds
            .iter()
            .find(|k| k.kind == kind)
            .map(|k| (k.allowed.clone(), k.by_name.clone()))
            .unwrap_or_else(|| panic!("{kind} is listed: {access:?}"))
    };
    assert_eq!(
        row("Pod"),
        (vec![true, true, true, false, false, false, false], vec![])
    );
    assert_eq!(
        row("Deployment"),
        (vec![false; 7], vec!["get, update: web".to_string()])
    );
    assert_eq!(row("Secret"), (vec![false; 7], vec![]));
    assert!(
        access
            .subresources
            .contains(&"create pods/exec".to_string()),
        "{access:?}"
    );
    assert!(
        access.kinds.iter().all(|k| k.kind != "Node"),
        "cluster-scoped kinds are not a namespace's"
    );

    let elsewhere = read(ask(other).await);
    assert_eq!(
        elsewhere.kinds.iter().filter(|k| k.any()).count(),
        0,
        "{elsewhere:?}"
    );
    assert_eq!(ask("../kube-system".into()).await.0, 400);
}

/// 200 asks at once of the same question for the same person (every tab of theirs
/// reconnecting after a rolling restart) reach the API server as one review; a
/// second question is its own review; the client is built once. Counted by the
/// pool's request counter, which sits where the requests leave for the API server.
#[tokio::test]
async fn two_hundred_asks_at_once_send_one_access_review() {
    use portico_server::auth::access::{AccessQuestion, AccessReviews};
    use portico_server::cluster::caller::{Caller, Token};
    use portico_server::cluster::request_metrics::{ApiRequestsLayer, latency_family};
    use prometheus_client::metrics::family::Family;
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "one-review").await;
    let token = crate::kit::account_token(&admin, &ns, "asker").await;
    let requests = Family::default();
    let pool = portico_server::cluster::pool::ClientPool::new(
        Some(crate::kit::shared_config().await),
        admin.clone(),
        ApiRequestsLayer::new(requests.clone(), latency_family()),
    );
    let reviews = AccessReviews::new(std::sync::Arc::new(pool));
    let caller = Caller::Bearer {
        name: crate::kit::account_user(&ns, "asker"),
        token: Token(token),
    };
    let question = |verb: &str| AccessQuestion {
        verb: verb.into(),
        group: String::new(),
        resource: "pods".into(),
        subresource: None,
        namespace: Some(ns.clone()),
        name: None,
    };
    let (watch, delete) = (question("watch"), question("delete"));
    let answers = futures::future::join_all((0..200).map(|i| {
        let question = if i % 100 == 99 { &delete } else { &watch };
        reviews.allowed(&caller, question)
    }))
    .await;
    let refused = answers
        .into_iter()
        .map(|answer| answer.expect("the API server answers"))
        .filter(|allowed| !allowed)
        .count();
    assert_eq!(refused, 200, "a new ServiceAccount may do neither");
    let mut text = String::new();
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register("sent", "requests", requests);
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encoded");
    let reviews_sent: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("sent_total{"))
        .collect();
    assert_eq!(
        reviews_sent,
        [
            "sent_total{verb=\"POST\",resource=\"selfsubjectaccessreviews.authorization.k8s.io\",code=\"201\"} 2"
        ],
        "{text}"
    );
}

/// The portal's `/metrics`, on a listener of its own: requests by route and status,
/// sign-ins by outcome, what people's clients asked of the API server, the live
/// streams and feeds open now, and the process' own figures; the reconciler's
/// families beside them, in one OpenMetrics text.
#[tokio::test]
async fn the_portal_counts_requests_sign_ins_and_live_views_on_its_metrics_port() {
    use portico_server::reconcile::metrics::{CONTENT_TYPE, Metrics};
    use portico_server::web::metrics_route::{Scraped, router};
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "portal-metrics").await;
    let portal = serve(&admin, None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let url = format!("http://{}/metrics", listener.local_addr().expect("address"));
    let scraped = Scraped {
        reconciler: std::sync::Arc::new(Metrics::new()),
        live: Some(portal.state.live.clone()),
    };
    let server = tokio::spawn(async move { axum::serve(listener, router(scraped)).await });
    let scrape = || async {
        let response = reqwest::get(&url).await.expect("scrape");
        assert!(response.status().is_success());
        assert_eq!(response.headers()["content-type"], CONTENT_TYPE);
        response.text().await.expect("metrics text")
    };

    let refused = crate::kit::sign_in_answer(&portal.base, "not-a-token").await;
    assert!(refused.status().is_client_error(), "{}", refused.status());
    let verbs = ["get", "list", "watch"];
    crate::kit::grant(&admin, &ns, "watch-stacks", STACKS, &verbs, "watcher").await;
    let session = portal.person(&admin, &ns, "watcher").await;
    let mut stream = reqwest::Client::new()
        .get(format!(
            "{}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}",
            portal.base
        ))
        .header("cookie", &session)
        .send()
        .await
        .expect("a live table");
    assert_eq!(stream.status().as_u16(), 200);
    // The first event: the feed has listed, so the stream and its feed are open.
    let first = stream.chunk().await.expect("an event").expect("not ended");
    assert!(!first.is_empty());

    let text = scrape().await;
    assert!(
        text.ends_with("# EOF\n") && text.matches("# EOF").count() == 1,
        "{text}"
    );
    let value = |series: &str| {
        text.lines()
            .filter_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .filter_map(|value| value.trim().parse::<f64>().ok())
            .sum::<f64>()
    };
    let sum_of = |prefix: &str| {
        text.lines()
            .filter(|line| line.starts_with(prefix))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    assert!(
        value("portico_sign_ins_total{via=\"token\",outcome=\"ok\"}") >= 1.0,
        "{text}"
    );
    assert!(
        value("portico_sign_ins_total{via=\"token\",outcome=\"refused\"}") >= 1.0,
        "{text}"
    );
    assert!(
        sum_of("portico_http_requests_total{route=\"/auth/login\",method=\"POST\"") >= 2.0,
        "{text}"
    );
    assert!(
        sum_of(
            "portico_http_requests_total{route=\"/api/live/table\",method=\"GET\",status=\"200\"}"
        ) >= 1.0,
        "{text}"
    );
    assert!(
        sum_of(
            "portico_portal_api_requests_total{verb=\"POST\",resource=\"selfsubjectaccessreviews.authorization.k8s.io\""
        ) >= 1.0,
        "{text}"
    );
    // What is live is this portal's own, read at the scrape.
    assert_eq!(value("portico_live_open{what=\"streams\"}"), 1.0, "{text}");
    assert!(
        value("portico_live_feeds{resource=\"stacks.portico.dev\"}") >= 1.0,
        "{text}"
    );
    assert!(value("portico_live_memory_limit_bytes") > 0.0, "{text}");
    assert!(value("process_resident_memory_bytes") > 0.0, "{text}");
    assert!(
        text.contains("portico_reconcile_total{outcome=\"applied\"} 0\n"),
        "{text}"
    );
    drop(stream);
    server.abort();
}
