//! The palette's search over many objects, beside the floor in the same run. Run with
//! `cargo bench -p server --bench find` (env BENCH_OBJECTS, default 50,000;
//! BENCH_NAMESPACES, default 20; BENCH_PEOPLE, default 5).
//!
//! A local cluster (simulated nodes) holds BENCH_OBJECTS ConfigMaps spread over
//! BENCH_NAMESPACES namespaces. BENCH_PEOPLE people (ServiceAccounts) may list
//! namespaces and hold Kubernetes' `view` role in each of those namespaces, not across
//! the cluster: to find a name, anything must look in each namespace.
//!
//! - **the floor**: a bare client with a person's token lists the ConfigMaps' names
//!   (metadata only, 500 a page, 8 lists at a time) in every namespace and ranks them
//!   in memory: the least any tool must do to answer one query knowing the kind;
//! - **Portico, first keystroke**: each person signs in and asks `/api/find` once (the
//!   names of every kind they may list read as them, then ranked);
//! - **Portico, next keystrokes**: one person types names letter by letter, each
//!   keystroke a request, as the palette sends them.
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use portico_test_kit as kit;

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use portico_control_plane::{ControlPlane, apply};
use portico_core::find::FoundObjects;
use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use serde_json::json;

const PEOPLE: &str = "people";
const IN_FLIGHT: usize = 32;

fn namespace(i: usize) -> String {
    format!("team-{i:02}")
}

fn person(i: usize) -> String {
    format!("finder-{i}")
}

fn object_name(i: usize) -> String {
    format!("settings-{i:05}")
}

async fn cluster(namespaces: usize, objects: usize, people: usize) -> (ControlPlane, kube::Client) {
    let plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .unwrap()
        .expect("control plane");
    let admin = plane.admin_client().await.expect("client");
    let started = Instant::now();
    kit::create_namespace(&admin, PEOPLE).await;
    let subjects: Vec<serde_json::Value> = (0..people)
        .map(|i| json!({"kind": "ServiceAccount", "name": person(i), "namespace": PEOPLE}))
        .collect();
    let lister = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "namespace-lister"},
        "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]});
    let listing = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "finders-list-namespaces"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "namespace-lister"},
        "subjects": subjects});
    apply::apply_all(
        &admin,
        [lister, listing]
            .into_iter()
            .map(|v| serde_json::from_value(v).unwrap())
            .collect(),
    )
    .await
    .expect("RBAC applies");
    let per_namespace = objects / namespaces;
    futures::stream::iter(0..namespaces)
        .for_each_concurrent(2, |n| {
            let (admin, subjects) = (admin.clone(), subjects.clone());
            async move {
                let ns = namespace(n);
                kit::create_namespace(&admin, &ns).await;
                let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "finders-view", "namespace": ns},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                    "subjects": subjects});
                apply::apply_all(&admin, vec![serde_json::from_value(binding).unwrap()])
                    .await
                    .expect("binding applies");
                let api: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
                futures::stream::iter(0..per_namespace)
                    .for_each_concurrent(IN_FLIGHT / 2, |i| {
                        let api = api.clone();
                        async move {
                            let map: ConfigMap = serde_json::from_value(json!({
                                "metadata": {"name": object_name(n * per_namespace + i)},
                                "data": {"level": "info"}}))
                            .unwrap();
                            api.create(&PostParams::default(), &map).await.expect("configmap");
                        }
                    })
                    .await;
            }
        })
        .await;
    println!(
        "{namespaces} namespaces, {} ConfigMaps, {people} people with `view` in each, in {:.1} s",
        per_namespace * namespaces,
        started.elapsed().as_secs_f64()
    );
    kit::until_subject_may(
        &admin,
        (&kit::account_user(PEOPLE, &person(people - 1)), &[]),
        "list",
        ("", "configmaps"),
        Some(&namespace(namespaces - 1)),
    )
    .await;
    (plane, admin)
}

/// The floor for one query: the person's bare client lists every namespace's
/// ConfigMap names and ranks them.
async fn floor(client: &kube::Client, namespaces: usize, query: &str) -> (Duration, usize) {
    let started = Instant::now();
    let names: Vec<(String, String)> = futures::stream::iter(0..namespaces)
        .map(|n| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace(n));
            async move {
                let mut names = Vec::new();
                let mut params = ListParams::default().limit(500);
                loop {
                    let page = api.list_metadata(&params).await.unwrap();
                    names.extend(
                        page.items
                            .into_iter()
                            .filter_map(|o| o.metadata.name)
                            .map(|name| (namespace(n), name)),
                    );
                    match page.metadata.continue_ {
                        Some(token) if !token.is_empty() => {
                            params = params.continue_token(&token);
                        }
                        _ => return names,
                    }
                }
            }
        })
        .buffer_unordered(8)
        .flat_map(futures::stream::iter)
        .collect()
        .await;
    let matched = names
        .iter()
        .filter(|(ns, name)| portico_core::find::rank(query, Some(ns), name).is_some())
        .count();
    (started.elapsed(), matched)
}

/// One keystroke: `/api/find` as the person; the time and the answer.
async fn find(
    http: &reqwest::Client,
    origin: &str,
    cookie: &str,
    query: &str,
) -> (Duration, FoundObjects) {
    let started = Instant::now();
    let response = http
        .post(format!("{origin}/api/find"))
        .header("cookie", cookie)
        .form(&[("query", query)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "find {query}");
    let found: FoundObjects = response.json().await.unwrap();
    (started.elapsed(), found)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn spread(mut samples: Vec<f64>) -> String {
    samples.sort_by(f64::total_cmp);
    format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)",
        kit::percentile(&samples, 0.5),
        kit::percentile(&samples, 0.99),
        samples.last().copied().unwrap_or(f64::NAN),
        samples.len()
    )
}

#[tokio::main]
async fn main() {
    let objects = kit::env_or("BENCH_OBJECTS", 50_000);
    let namespaces = kit::env_or("BENCH_NAMESPACES", 20);
    let people = kit::env_or("BENCH_PEOPLE", 5);
    let (plane, admin) = cluster(namespaces, objects, people).await;
    let wanted = object_name(objects / 2);

    let mut tokens = Vec::new();
    for i in 0..people {
        tokens.push(kit::account_token(&admin, PEOPLE, &person(i)).await);
    }
    let bare = kit::client_as(plane.admin_kubeconfig(), &tokens[0]).await;
    let mut floors = Vec::new();
    for _ in 0..5 {
        let (took, matched) = floor(&bare, namespaces, &wanted).await;
        assert_eq!(matched, 1, "the floor finds {wanted}");
        floors.push(ms(took));
    }
    println!(
        "floor (bare client as a person: ConfigMap names in {namespaces} namespaces, ranked): {}",
        spread(floors)
    );

    let identity = IdentityConfig {
        mode: IdentityMode::Token,
        sessions: Some(SessionKey::random().unwrap()),
        ..IdentityConfig::local()
    };
    let config = portico_server::cluster::config::config(Some(plane.admin_kubeconfig()), None)
        .await
        .unwrap();
    let before = kit::rss_mb(std::process::id(), "VmRSS:");
    let (origin, _portal) = kit::serve_limited(&admin, Some((identity, config)), None).await;
    let http = reqwest::Client::new();
    let mut cookies = Vec::new();
    for token in &tokens {
        cookies.push(kit::sign_in(&origin, token).await);
    }
    let mut firsts = Vec::new();
    for cookie in &cookies {
        let (took, found) = find(&http, &origin, cookie, &wanted).await;
        assert_eq!(
            found.objects.first().map(|o| o.name.as_str()),
            Some(wanted.as_str()),
            "{found:?}"
        );
        firsts.push(ms(took));
        if firsts.len() == 1 {
            println!(
                "Portico looked through {} objects of every kind the person may list (unseen: {:?})",
                found.looked_through, found.unseen
            );
        }
    }
    println!(
        "Portico, first keystroke (every kind's names read as the person): {}",
        spread(firsts)
    );

    let mut keystrokes = Vec::new();
    let cookie = &cookies[0];
    for k in 0..20 {
        let name = object_name((k * 2_477 + 13) % objects);
        for end in 1..=name.len() {
            let (took, found) = find(&http, &origin, cookie, &name[..end]).await;
            if end == name.len() {
                assert_eq!(
                    found.objects.first().map(|o| o.name.as_str()),
                    Some(name.as_str())
                );
            }
            keystrokes.push(ms(took));
        }
    }
    println!(
        "Portico, next keystrokes (names kept, ranked per keystroke): {}",
        spread(keystrokes)
    );
    let after = kit::rss_mb(std::process::id(), "VmRSS:");
    println!(
        "memory: the benchmark's process (Portico in it) grew {:.1} MB holding {people} people's names",
        after - before
    );
}
