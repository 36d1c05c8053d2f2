//! The tab's live connection (`/api/live`) against a real kube-apiserver: views opened
//! and closed by messages, resuming after a reconnect with only what was missed, and
//! hostile use (another site's page, oversized or unreadable messages, too many views).
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use portico_core::live::protocol::{
    ClientMessage, MAX_SUBSCRIPTIONS, Position, ServerMessage, Topic,
};
use portico_core::table::wire::TableQuery;

use crate::kit::socket::{self, Socket};

const WAIT: Duration = Duration::from_secs(10);

/// The tab's socket, not signed in (local mode).
async fn connect(origin: &str) -> Socket {
    socket::connect(origin, socket::LIVE, None, None).await
}

/// The next message from the server; `None` once the socket is closed.
async fn receive(socket: &mut Socket) -> Option<ServerMessage> {
    socket::next_json(socket, WAIT).await
}

fn config_maps(ns: &str) -> TableQuery {
    TableQuery {
        group: String::new(),
        version: "v1".into(),
        plural: "configmaps".into(),
        namespace: Some(ns.into()),
        label_selector: None,
        field_selector: None,
        columns: None,
    }
}

fn subscribe(id: u32, ns: &str, resume: Option<Position>) -> ClientMessage {
    ClientMessage::Subscribe {
        id,
        topic: Topic::Table {
            query: config_maps(ns),
        },
        resume,
    }
}

async fn create(client: &kube::Client, ns: &str, name: &str) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let map: ConfigMap =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("map");
    api.create(&PostParams::default(), &map)
        .await
        .expect("create");
}

/// The next message that is not a CRD catalog signal (a `crds` view may send one as
/// soon as it opens).
async fn receive_skipping_changed(socket: &mut Socket) -> Option<ServerMessage> {
    loop {
        match receive(socket).await? {
            ServerMessage::Changed { .. } => continue,
            other => return Some(other),
        }
    }
}

/// Names in a delta's upserts.
fn upserted(message: &ServerMessage) -> Vec<String> {
    match message {
        ServerMessage::Delta { delta, .. } => {
            delta.upserts.iter().map(|r| r.name.clone()).collect()
        }
        other => panic!("a delta expected, got {other:?}"),
    }
}

#[tokio::test]
async fn views_open_and_close_by_message_and_a_reconnect_resumes_with_what_was_missed() {
    let client = crate::kit::admin_with_stack_crd().await;
    let (origin, state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "socket").await;
    create(&client, &ns, "first").await;

    let mut socket = connect(&origin).await;
    socket::send_json(&mut socket, &subscribe(7, &ns, None)).await;
    let Some(ServerMessage::Snapshot {
        id: 7,
        at,
        table,
        complete: true,
    }) = receive(&mut socket).await
    else {
        panic!("a whole snapshot for subscription 7 first");
    };
    // kube-root-ca.crt, made by the controllers, may or may not be there yet.
    assert!(table.rows.iter().any(|r| r.name == "first"));
    assert_eq!(state.live.streams.open_for(&None), 1, "one live view open");

    // A second view on the same socket, then closing the first: its work stops at once.
    socket::send_json(
        &mut socket,
        &ClientMessage::Subscribe {
            id: 8,
            topic: Topic::Crds,
            resume: None,
        },
    )
    .await;
    // The CRD view counts like any other.
    let both = tokio::time::timeout(WAIT, async {
        while state.live.streams.open_for(&None) != 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(both.is_ok(), "the CRD view is counted");
    socket::send_json(&mut socket, &ClientMessage::Unsubscribe { id: 7 }).await;
    let closed = tokio::time::timeout(WAIT, async {
        while state.live.streams.open_for(&None) != 1 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "the unsubscribed view was released");

    // Cut off; meanwhile two objects are made. Back with the position: only those two.
    drop(socket);
    create(&client, &ns, "while-away-1").await;
    create(&client, &ns, "while-away-2").await;
    let mut socket = connect(&origin).await;
    socket::send_json(&mut socket, &subscribe(7, &ns, Some(at.clone()))).await;
    let missed = receive(&mut socket).await.expect("the missed changes");
    let mut names = upserted(&missed);
    names.sort();
    assert!(
        names.ends_with(&["while-away-1".to_string(), "while-away-2".to_string()]),
        "only the changes since the position (kube-root-ca.crt may be one): {names:?}"
    );
    assert!(!names.contains(&"first".to_string()));

    // A position the server cannot honour (another run of the feed) gets a snapshot.
    let stranger = Position {
        feed: "0000000000000000".into(),
        seq: at.seq,
    };
    socket::send_json(&mut socket, &subscribe(9, &ns, Some(stranger))).await;
    loop {
        match receive(&mut socket).await.expect("an answer") {
            ServerMessage::Snapshot { id: 9, table, .. } => {
                assert!(table.rows.iter().any(|r| r.name == "while-away-2"));
                break;
            }
            ServerMessage::Delta { id: 7, .. } => continue,
            other => panic!("a snapshot for 9 expected, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn hostile_use_is_refused_and_bounded() {
    let client = crate::kit::admin_with_stack_crd().await;
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let ns = crate::kit::fresh_namespace(&client, "hostile").await;

    // Another site's page, riding the person's cookie: refused at the handshake.
    let refused = socket::open(&origin, socket::LIVE, None, Some("https://evil.example")).await;
    let (status, _) = socket::refusal(refused);
    assert_eq!(status, 403);

    // A query that would steer to another API path: refused with a sentence, and the
    // socket stays usable.
    let mut socket = connect(&origin).await;
    let mut bad = config_maps(&ns);
    bad.plural = "pods/../secrets".into();
    socket::send_json(
        &mut socket,
        &ClientMessage::Subscribe {
            id: 1,
            topic: Topic::Table { query: bad },
            resume: None,
        },
    )
    .await;
    let Some(ServerMessage::Refused { id: 1, message }) = receive(&mut socket).await else {
        panic!("refused");
    };
    assert!(message.contains("DNS-style"), "{message}");

    // More views than a page may hold: the one too many is refused.
    for id in 0..MAX_SUBSCRIPTIONS as u32 {
        socket::send_json(
            &mut socket,
            &ClientMessage::Subscribe {
                id: 100 + id,
                topic: Topic::Crds,
                resume: None,
            },
        )
        .await;
    }
    socket::send_json(
        &mut socket,
        &ClientMessage::Subscribe {
            id: 999,
            topic: Topic::Crds,
            resume: None,
        },
    )
    .await;
    let Some(ServerMessage::Refused { id: 999, message }) =
        receive_skipping_changed(&mut socket).await
    else {
        panic!("the view too many is refused");
    };
    assert!(
        message.contains(&MAX_SUBSCRIPTIONS.to_string()),
        "{message}"
    );

    // An unreadable message closes the socket; so does one over the size limit.
    socket::send_text(&mut socket, "{\"op\":\"launch\"}")
        .await
        .expect("send");
    assert!(
        receive_skipping_changed(&mut socket).await.is_none(),
        "closed after nonsense"
    );
    let mut socket = connect(&origin).await;
    let huge = format!(
        "{{\"op\":\"unsubscribe\",\"id\":1,\"pad\":\"{}\"}}",
        "x".repeat(1 << 20)
    );
    let _ = socket::send_text(&mut socket, huge).await;
    assert!(
        receive(&mut socket).await.is_none(),
        "closed after an oversized message"
    );
}
