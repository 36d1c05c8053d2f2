//! Integration tests against a real kube-apiserver (see portico-control-plane).
use std::path::PathBuf;
use std::time::Duration;

use app::backend::BackendError;
use kube::api::{Api, DynamicObject};
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_core::payload::ApiRejection;
use portico_server::cluster::registry::KindRegistry;
use portico_server::web::backend::objects;
use portico_server::web::state::AppState;

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/fixtures/seeds")
}

/// (CRD name, kind, group) of every seed.
const SEED_CRDS: [(&str, &str, &str); 5] = [
    ("crdplural.iksoon.test.com", "CrdKind", "iksoon.test.com"),
    ("ats.cnat.study.jayground8", "At", "cnat.study.jayground8"),
    (
        "websites.extensions.example.com",
        "Website",
        "extensions.example.com",
    ),
    ("helloapps.apps.anupam.com", "HelloApp", "apps.anupam.com"),
    (
        "virtulmachines.infra.sealyun.com",
        "VirtulMachine",
        "infra.sealyun.com",
    ),
];

async fn client_with_seeds() -> kube::Client {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let mut objects = Vec::new();
    for file in apply::manifest_files(&seeds_dir()).expect("seed fixtures") {
        objects.extend(apply::read_documents(&file).expect("seed YAML"));
    }
    apply::apply_all(&client, objects)
        .await
        .expect("seeds apply and their CRDs become Established");
    client
}

#[tokio::test]
async fn discovery_lists_every_seed_crd_once_established() {
    let client = client_with_seeds().await;
    let (catalog, driver) = KindRegistry::start(client, ("portico.dev", "stacks"));
    let watch = tokio::spawn(driver);
    assert!(catalog.wait_loaded(Duration::from_secs(30)).await);
    let summaries = catalog.crds();
    for (name, kind, group) in SEED_CRDS {
        let found = summaries
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name} missing from discovery: {summaries:?}"));
        assert_eq!(found.kind, kind);
        assert_eq!(found.group, group);
        assert_eq!(found.scope, "Namespaced");
        assert!(found.established, "{name} should be Established");
        assert!(found.served_versions().next().is_some());
    }
    let crdkind = summaries
        .iter()
        .find(|s| s.kind == "CrdKind")
        .expect("CrdKind");
    assert_eq!(crdkind.short_names, ["crdshort", "iksoontest"]);

    // Built-in kinds come from the API server's own discovery, not a list in Portico.
    let deployments = catalog.lookup("apps", "deployments").expect("deployments");
    assert_eq!(deployments.kind, "Deployment");
    assert_eq!(deployments.short_names, ["deploy"]);
    assert!(deployments.flags.builtin && deployments.flags.can_own);
    let namespaces = catalog.lookup("", "namespaces").expect("namespaces");
    assert!(!namespaces.namespaced);
    let leases = catalog
        .resolve("coordination.k8s.io", "v1", "Lease")
        .expect("leases, which Portico never named");
    assert_eq!(leases.plural, "leases");
    assert!(
        catalog
            .lookup("authentication.k8s.io", "tokenreviews")
            .is_none(),
        "kinds that cannot be listed are not tables"
    );
    let crd = catalog
        .lookup("iksoon.test.com", "crdplural")
        .expect("the seed CRD");
    assert!(!crd.flags.builtin && !crd.flags.is_stack);
    assert!(
        catalog
            .printer_columns("iksoon.test.com", "crdplural", "v1")
            .is_some(),
        "a CRD version's printer columns"
    );
    let children: Vec<String> = catalog
        .child_kinds("", usize::MAX)
        .into_iter()
        .map(|k| k.kind)
        .collect();
    assert!(
        children.iter().any(|k| k == "Pod") && children.iter().any(|k| k == "CrdKind"),
        "{children:?}"
    );
    assert!(!children.iter().any(|k| k == "Event" || k == "Namespace"));
    watch.abort();
}

#[tokio::test]
async fn invalid_crdkind_is_rejected_with_the_servers_field_causes() {
    let client = client_with_seeds().await;
    let docs = apply::read_documents(&seeds_dir().join("000-crdkind-invalid.yaml"))
        .expect("invalid fixture parses");
    let [bad] = docs.as_slice() else {
        panic!("one document expected")
    };
    let err = objects::create(&client, &crate::kit::kinds(&client).await, bad, false)
        .await
        .expect_err("the API server must refuse choice: postgres, replicas: 11");
    let Some(ApiRejection {
        code,
        reason,
        causes,
        message,
    }) = err.rejection().cloned()
    else {
        panic!("expected a rejection, got {err:?}")
    };
    assert_eq!(code, 422, "{message}");
    assert_eq!(reason, "Invalid");
    let fields: Vec<&str> = causes.iter().map(|c| c.field.as_str()).collect();
    assert!(fields.contains(&"spec.choice"), "{causes:?}");
    assert!(fields.contains(&"spec.replicas"), "{causes:?}");
    let choice = causes
        .iter()
        .find(|c| c.field == "spec.choice")
        .expect("choice cause");
    assert!(choice.message.contains("(mysql|tomcat)"), "{choice:?}");

    // Nothing was stored.
    let (resource, _) = kube::discovery::pinned_kind(
        &client,
        &kube::core::GroupVersionKind::gvk("iksoon.test.com", "v1", "CrdKind"),
    )
    .await
    .expect("CrdKind is served");
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    assert!(api.get_opt("iksoon-crd-bad").await.expect("get").is_none());
}

#[tokio::test]
async fn http_server_is_ready_and_its_server_function_lists_the_seeds() {
    let client = client_with_seeds().await;
    let options = portico_server::config::leptos_options(None).expect("leptos options");
    let (state, watches) = AppState::new(
        client,
        options,
        portico_server::reconcile::catalog::LiveCatalog::fixed(
            portico_server::reconcile::catalog::Catalog::load(None).expect("catalog"),
        ),
    );
    let catalog = state.kinds.clone();
    let watch = tokio::spawn(watches);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let on_shutdown = state.clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, portico_server::web::router::router(state))
            .with_graceful_shutdown(async move {
                let _ = stop_rx.await;
                on_shutdown.begin_shutdown();
            })
            .await
    });
    let http = reqwest::Client::new();
    let base = format!("http://{addr}");

    assert_eq!(
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .expect("healthz")
            .status(),
        200
    );
    assert!(catalog.wait_loaded(Duration::from_secs(30)).await);
    assert_eq!(
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .expect("readyz")
            .status(),
        200,
        "ready once the API server answers and the catalog has loaded"
    );

    let response = http
        .post(format!("{base}/api/crds"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .expect("server function");
    assert_eq!(response.status(), 200);
    let forged = http
        .post(format!("{base}/api/crds"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "http://evil.example")
        .body("")
        .send()
        .await
        .expect("forged request");
    assert_eq!(forged.status(), 403, "cross-site POSTs are refused");
    let names: Vec<String> = response
        .json::<Vec<portico_core::payload::CrdSummary>>()
        .await
        .expect("JSON list of CRDs")
        .into_iter()
        .map(|c| c.name)
        .collect();
    for (name, _, _) in SEED_CRDS {
        assert!(names.iter().any(|n| n == name), "{name} not in {names:?}");
    }
    let page = http.get(format!("{base}/crds")).send().await.expect("page");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.expect("html");
    assert!(html.contains("Resource types"));
    assert!(
        html.contains("crdplural.iksoon.test.com"),
        "SSR renders the CRDs"
    );

    // Graceful shutdown completes even while a live table is open.
    let live = http
        .get(format!(
            "{base}/api/live/table?group=&version=v1&plural=configmaps&namespace=default"
        ))
        .send()
        .await
        .expect("live table");
    assert_eq!(live.status(), 200);
    let bad = http
        .get(format!(
            "{base}/api/live/table?group=&version=v1&plural=pods%2F..%2Fsecrets"
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(bad.status(), 400, "path segments are validated");
    let _ = stop_tx.send(());
    let stopped = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stops despite the open stream");
    assert!(stopped.is_ok_and(|r| r.is_ok()));
    drop(live);
    watch.abort();
}

#[tokio::test]
async fn bad_requests_get_the_status_that_names_the_mistake() {
    let client = client_with_seeds().await;
    let (base, _state) = crate::kit::serve(&client, None).await;
    let http = reqwest::Client::new();
    // A server-function call as a browser form would send it.
    let call = |endpoint: &str, body: reqwest::Body| {
        http.post(format!("{base}/api/{endpoint}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };

    // Over the 2 MiB limit: 413 with a sentence, whether the length is announced or
    // the body is streamed without one.
    let oversized = "x=".to_string() + &"a".repeat(3 * 1024 * 1024);
    let announced = call("crds", oversized.clone().into())
        .await
        .expect("oversized request");
    assert_eq!(announced.status(), 413);
    let why = announced.text().await.expect("body");
    assert!(why.contains("larger than"), "the answer says why: {why}");
    let chunks = futures::stream::iter(
        oversized
            .into_bytes()
            .chunks(64 * 1024)
            .map(|c| Ok::<_, std::io::Error>(bytes::Bytes::copy_from_slice(c)))
            .collect::<Vec<_>>(),
    );
    let streamed = call("crds", reqwest::Body::wrap_stream(chunks))
        .await
        .expect("streamed request");
    assert_eq!(streamed.status(), 413);

    // Arguments that do not decode: 400 naming what is wrong, in the server-function
    // error encoding Portico's pages decode.
    let malformed = call("object", "key[name]=x&key[resource]=not-a-resource".into())
        .await
        .expect("malformed request");
    assert_eq!(malformed.status(), 400);
    assert_eq!(malformed.headers()["cache-control"], "no-store");
    // The typed error the pages decode, saying what could not be read.
    let error: BackendError =
        serde_json::from_str(&malformed.text().await.expect("body")).expect("a typed error");
    assert!(
        matches!(&error, BackendError::BadRequest(why) if why.contains("not-a-resource")),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with("Portico could not read this request's arguments: "),
        "{error}"
    );
    let missing = call("delete", "".into())
        .await
        .expect("request missing every argument");
    assert_eq!(missing.status(), 400);
    let sentence = missing.text().await.expect("body");
    assert!(sentence.contains("missing field"), "{sentence}");
    // A whole object travels as a JSON body; one that does not parse is 400 too.
    let broken = http
        .post(format!("{base}/api/submit"))
        .header("content-type", "application/json")
        .body(r#"{"object": {"kind": "#)
        .send()
        .await
        .expect("a broken JSON body");
    assert_eq!(broken.status(), 400);

    // Well-formed arguments the cluster cannot satisfy are not the client's syntax
    // mistake: whatever they answer, it is not 400.
    let absent = call(
        "object",
        "key[resource][group]=no.such.group&key[resource][version]=v1&key[resource][plural]=nothings&key[name]=x"
            .into(),
    )
    .await
    .expect("request for an unknown kind");
    assert_eq!(absent.status(), 404, "an unknown kind is not found");
    assert!(absent.text().await.expect("body").contains("nothings"));

    // Names that would leave their path segment never reach the API server.
    for crafted in ["x?watch=true", "..%2Fsecrets", "x#y", "a b"] {
        let body = form_urlencoded::Serializer::new(String::new())
            .append_pair("key[resource][group]", "")
            .append_pair("key[resource][version]", "v1")
            .append_pair("key[resource][plural]", "configmaps")
            .append_pair("key[namespace]", "default")
            .append_pair("key[name]", crafted)
            .finish();
        let refused = call("object", body.into()).await.expect("crafted name");
        assert_ne!(refused.status(), 200, "{crafted}");
        let error: BackendError =
            serde_json::from_str(&refused.text().await.expect("body")).expect("a typed error");
        assert!(
            matches!(error, BackendError::NotFound(_))
                && error.to_string().contains("was not found"),
            "{crafted}: {error:?}"
        );
    }

    // Pages, server-function answers and live streams are never stored by a cache.
    let page = http.get(format!("{base}/crds")).send().await.expect("page");
    assert_eq!(page.headers()["cache-control"], "no-store");
    let stream = http
        .get(format!("{base}/api/live/crds"))
        .send()
        .await
        .expect("live stream");
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    assert_eq!(stream.headers()["cache-control"], "no-store");
}

#[tokio::test]
async fn secret_values_never_reach_the_edit_form_and_saving_it_keeps_them() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::ResourceExt;
    let client = client_with_seeds().await;
    let ns = crate::kit::fresh_namespace(&client, "secret-edit").await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let value = "hunter2-correct-horse";
    let stored: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db", "annotations": {
            "kubectl.kubernetes.io/last-applied-configuration":
                format!(r#"{{"stringData":{{"password":"{value}"}}}}"#)}},
        "stringData": {"password": value},
    }))
    .expect("secret");
    secrets
        .create(&kube::api::PostParams::default(), &stored)
        .await
        .expect("create secret");
    let (base, _state) = crate::kit::serve(&client, None).await;
    let http = reqwest::Client::new();
    let target = [
        ("key[resource][group]", ""),
        ("key[resource][version]", "v1"),
        ("key[resource][plural]", "secrets"),
        ("key[namespace]", ns.as_str()),
        ("key[name]", "db"),
    ];

    let for_edit = http
        .post(format!("{base}/api/object-json"))
        .form(&target)
        .send()
        .await
        .expect("object-json");
    assert_eq!(for_edit.status(), 200);
    let text = for_edit.text().await.expect("body");
    let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, value);
    assert!(!text.contains(value), "{text}");
    assert!(!text.contains(&encoded), "{text}");
    assert!(!text.contains("last-applied-configuration"), "{text}");

    // Saved from the form with a label added: the stored value survives.
    let mut edited: serde_json::Value = serde_json::from_str(&text).expect("json");
    edited["metadata"]["labels"] = serde_json::json!({"team": "payments"});
    let save = serde_json::json!({
        "key": {"resource": {"group": "", "version": "v1", "plural": "secrets"}, "namespace": ns, "name": "db"},
        "object": edited,
        "dry_run": false,
    });
    let saved = http
        .post(format!("{base}/api/replace"))
        .json(&save)
        .send()
        .await
        .expect("replace");
    assert_eq!(saved.status(), 200);
    let outcome: portico_core::payload::SubmitOutcome = saved.json().await.expect("outcome");
    assert!(
        matches!(
            outcome,
            portico_core::payload::SubmitOutcome::Accepted { .. }
        ),
        "{outcome:?}"
    );
    let after = secrets.get("db").await.expect("secret after the save");
    assert_eq!(
        after.labels().get("team").map(String::as_str),
        Some("payments")
    );
    let password = after
        .data
        .as_ref()
        .and_then(|d| d.get("password"))
        .expect("the password is still stored");
    assert_eq!(password.0, value.as_bytes());
}

/// The cluster under test is the minor the run says (`PORTICO_EXPECT_KUBERNETES_MINOR`,
/// set by scripts/compat.sh), or the pinned one: a compatibility run that quietly
/// started the newer API server would prove nothing.
#[tokio::test]
async fn the_api_server_is_the_kubernetes_version_under_test() {
    let expected = std::env::var("PORTICO_EXPECT_KUBERNETES_MINOR").unwrap_or_else(|_| {
        portico_control_plane::pinned_kubernetes_version()
            .split('.')
            .nth(1)
            .expect("a pinned v1.N.P")
            .to_string()
    });
    if std::env::var_os("KUBECONFIG").is_some()
        && std::env::var_os("PORTICO_EXPECT_KUBERNETES_MINOR").is_none()
    {
        // Someone else's cluster, of whatever version: nothing was promised.
        return;
    }
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let version = client.apiserver_version().await.expect("/version");
    assert_eq!(version.minor.trim_end_matches('+'), expected, "{version:?}");
}
