//! The home page's live view (`Topic::Overview` on the tab's socket) on the real node,
//! as a person: a Deployment that never gets ready in their namespace shows as a
//! workload short of its replicas, a Pod not ready and its Warning events, each linked
//! to its page, while the same trouble in a namespace they may not read shows nowhere.
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use portico_core::live::protocol::{ServerMessage, Topic};
use portico_core::overview::{Overview, OverviewQuery};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

use super::{Socket, admin, connect, subscribe_to, token_mode_portal};

/// The kubelet's first word on a Pod comes once it is placed and its image looked for.
const TROUBLE_WAIT: Duration = Duration::from_secs(180);

/// A Deployment of one replica whose image the node does not hold and may not pull:
/// never ready, the kubelet's Warning events, and no container running (a crash loop
/// would cost the node beside the other tests).
async fn never_ready(admin: &kube::Client, ns: &str) {
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{"name": "app", "image": "portico.local/absent:1", "imagePullPolicy": "Never"}],
                },
            },
        },
    }))
    .expect("deployment");
    crate::kit::create_soon(&Api::namespaced(admin.clone(), ns), &deployment).await;
}

/// View `id`'s overviews as they come, until one satisfies `done`; every overview
/// (of any view) is also checked with `never`.
async fn until_overview(
    socket: &mut Socket,
    view: u32,
    done: impl Fn(&Overview) -> bool,
    never: impl Fn(&Overview) -> Option<String>,
) -> Overview {
    let deadline = tokio::time::Instant::now() + TROUBLE_WAIT;
    let mut last = None;
    loop {
        let frame = tokio::time::timeout_at(deadline, socket.next()).await;
        let Ok(Some(Ok(frame))) = frame else {
            panic!("no overview in time came to what was expected; the last: {last:#?}");
        };
        let Message::Text(text) = frame else { continue };
        match serde_json::from_str::<ServerMessage>(&text).expect("a message") {
            ServerMessage::Overview { id, overview } => {
                if let Some(leak) = never(&overview) {
                    panic!("{leak}: {overview:#?}");
                }
                if id == view && done(&overview) {
                    return overview;
                }
                last = Some(overview);
            }
            ServerMessage::Refused { message, .. } => panic!("refused: {message}"),
            ServerMessage::Problem { message, .. } => panic!("a problem: {message}"),
            _ => {}
        }
    }
}

/// Whatever of `ns` an overview names, said as a sentence.
fn names_namespace(overview: &Overview, ns: &str) -> Option<String> {
    let ns = Some(ns.to_string());
    let sections = [
        &overview.stacks,
        &overview.bindings,
        &overview.pods,
        &overview.workloads,
        &overview.changes,
    ];
    let item = sections
        .iter()
        .flat_map(|s| s.items.iter())
        .find(|i| i.namespace == ns)
        .map(|i| {
            format!(
                "{} {} of a namespace the person may not read",
                i.kind, i.name
            )
        });
    item.or_else(|| {
        overview
            .warnings
            .iter()
            .find(|g| g.namespace == ns)
            .map(|g| {
                format!(
                    "warnings of {} in a namespace the person may not read",
                    g.name
                )
            })
    })
}

/// Whether `overview` shows `ns`'s never-ready `web` everywhere it belongs.
fn shows_the_trouble(overview: &Overview, ns: &str) -> bool {
    let mine = Some(ns.to_string());
    let workload = overview.workloads.items.iter().any(|i| {
        i.namespace == mine
            && i.kind == "Deployment"
            && i.name == "web"
            && i.state == "0 of 1 ready"
            && i.href.as_deref() == Some(&format!("/r/apps/v1/deployments/{ns}/web"))
    });
    let pod = overview.pods.items.iter().any(|i| {
        i.namespace == mine
            && i.name.starts_with("web-")
            && i.href.as_deref() == Some(&format!("/r/core/v1/pods/{ns}/{}", i.name))
            && i.state.contains("0/1 ready")
    });
    let warned = overview.warnings.iter().any(|g| {
        g.namespace == mine
            && g.kind == "pod"
            && g.name.starts_with("web-")
            && g.href.as_deref() == Some(&format!("/r/core/v1/pods/{ns}/{}", g.name))
            && g.warnings.iter().any(|w| w.reason == "ErrImageNeverPull")
    });
    let changed = overview
        .changes
        .items
        .iter()
        .any(|i| i.namespace == mine && i.kind == "Deployment" && i.name == "web");
    workload && pod && warned && changed
}

#[tokio::test]
async fn the_home_page_shows_whats_wrong_where_the_person_reads_and_nothing_elsewhere() {
    let admin = admin().await;
    let mine = crate::kit::fresh_namespace(&admin, "home-mine").await;
    let secret = crate::kit::fresh_namespace(&admin, "home-secret").await;
    // Where she may read Pods and events only (no Stacks, no workloads).
    let pods_only = crate::kit::fresh_namespace(&admin, "home-pods").await;
    never_ready(&admin, &mine).await;
    never_ready(&admin, &secret).await;
    never_ready(&admin, &pods_only).await;
    let token = crate::kit::account_token(&admin, &mine, "ada").await;
    let reads = json!({
        "apiGroups": ["", "apps", "portico.dev"],
        "resources": ["pods", "events", "deployments", "statefulsets", "daemonsets", "stacks", "stackbindings"],
        "verbs": ["get", "list", "watch"],
    });
    crate::kit::grant_rule(&admin, &mine, "read-ada", reads, "ada").await;
    let user = crate::kit::account_user(&mine, "ada");
    let pods_and_events = json!({
        "apiGroups": [""], "resources": ["pods", "events"], "verbs": ["get", "list", "watch"],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "ada-reads-pods", "namespace": pods_only},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pods-and-events"},
        "subjects": [{"kind": "ServiceAccount", "name": "ada", "namespace": mine}],
    });
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "pods-and-events", "namespace": pods_only},
        "rules": [pods_and_events],
    });
    portico_control_plane::apply::apply_all(
        &admin,
        vec![
            serde_json::from_value(role).expect("role"),
            serde_json::from_value(binding).expect("binding"),
        ],
    )
    .await
    .expect("RBAC applies");
    crate::kit::until_subject_may(
        &admin,
        (&user, &[]),
        "watch",
        ("", "events"),
        Some(&pods_only),
    )
    .await;
    crate::kit::until_subject_may(
        &admin,
        (&user, &[]),
        "watch",
        ("apps", "daemonsets"),
        Some(&mine),
    )
    .await;
    // Permissions asked again every second (withdrawn below).
    let limits = portico_server::live::budgets::limits::LiveLimits {
        recheck: Duration::from_secs(1),
        ..Default::default()
    };
    let (origin, _portal) = token_mode_portal(&admin, Some(limits)).await;
    let cookie = crate::kit::sign_in(&origin, &token).await;
    let mut socket = connect(&origin, Some(&cookie)).await;

    // Every namespace: ada may not list them, so the page says how to see hers.
    subscribe_to(
        &mut socket,
        1,
        Topic::Overview {
            query: OverviewQuery::default(),
        },
    )
    .await;
    let everywhere = until_overview(
        &mut socket,
        1,
        |o| o.complete,
        |o| names_namespace(o, &secret),
    )
    .await;
    assert_eq!((everywhere.pods_seen, everywhere.workloads_seen), (0, 0));
    assert_eq!(
        everywhere.unseen,
        [
            "You may not see Stacks, bindings, events, Pods, Deployments, StatefulSets and DaemonSets across namespaces, nor list namespaces: pick your namespace to see them."
        ]
    );

    // Her namespace: the trouble, each part linked to its page.
    let query = OverviewQuery {
        namespace: Some(mine.clone()),
    };
    subscribe_to(&mut socket, 2, Topic::Overview { query }).await;
    let overview = until_overview(
        &mut socket,
        2,
        |o| shows_the_trouble(o, &mine),
        |o| names_namespace(o, &secret),
    )
    .await;
    assert!(overview.unseen.is_empty(), "{:?}", overview.unseen);

    // The other namespace, asked for by name: refused, nothing of it sent.
    let query = OverviewQuery {
        namespace: Some(secret.clone()),
    };
    subscribe_to(&mut socket, 3, Topic::Overview { query }).await;
    let refused = until_overview(
        &mut socket,
        3,
        |o| !o.unseen.is_empty(),
        |o| names_namespace(o, &secret),
    )
    .await;
    assert_eq!((refused.pods_seen, refused.workloads_seen), (0, 0));
    assert_eq!(
        refused.unseen,
        [format!(
            "You may not see Stacks, bindings, events, Pods, Deployments, StatefulSets and DaemonSets in namespace {secret}."
        )]
    );

    // Allowed to list namespaces (not to read them): every namespace she reads, one
    // by one, and still nothing of the other.
    let list_namespaces = vec![
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": format!("{mine}-list-namespaces")},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}],
        }))
        .expect("role"),
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{mine}-list-namespaces")},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": format!("{mine}-list-namespaces")},
            "subjects": [{"kind": "ServiceAccount", "name": "ada", "namespace": mine}],
        }))
        .expect("binding"),
    ];
    portico_control_plane::apply::apply_all(&admin, list_namespaces)
        .await
        .expect("RBAC applies");
    crate::kit::until_subject_may(&admin, (&user, &[]), "list", ("", "namespaces"), None).await;
    subscribe_to(
        &mut socket,
        4,
        Topic::Overview {
            query: OverviewQuery::default(),
        },
    )
    .await;
    // Her namespaces are those where she reads any of it: the Pods-only one too.
    let failing_in = |o: &Overview, ns: &str| {
        o.pods
            .items
            .iter()
            .any(|i| i.namespace.as_deref() == Some(ns) && i.name.starts_with("web-"))
    };
    let listed = until_overview(
        &mut socket,
        4,
        |o| shows_the_trouble(o, &mine) && failing_in(o, &pods_only),
        |o| names_namespace(o, &secret),
    )
    .await;
    assert!(listed.unseen.is_empty(), "{:?}", listed.unseen);
    // Only what she may read: two namespaces' Pods, one namespace's workloads.
    assert_eq!(listed.workloads_seen, 1);

    // Her reading rights withdrawn: what the page showed of them goes.
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(admin.clone(), &mine);
    bindings
        .delete("read-ada", &kube::api::DeleteParams::default())
        .await
        .expect("the binding is deleted");
    let withdrawn = until_overview(
        &mut socket,
        4,
        |o| names_namespace(o, &mine).is_none() && o.workloads_seen == 0,
        |o| names_namespace(o, &secret),
    )
    .await;
    assert!(
        withdrawn.unseen.contains(&format!(
            "Your permission to see Pods in {mine} was withdrawn: they are no longer shown."
        )),
        "{:?}",
        withdrawn.unseen
    );
    // What she still reads stays.
    assert!(failing_in(&withdrawn, &pods_only), "{withdrawn:#?}");

    for ns in [&mine, &secret, &pods_only] {
        crate::kit::delete_namespace(&admin, ns).await;
    }
}
