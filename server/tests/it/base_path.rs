//! Portico served under `--base-path /portico`, beside another Portico at the root in
//! the same process (the base path is each instance's state, not a global). Pages,
//! assets, server functions and live streams answer under the prefix, links in the
//! HTML carry it, and health checks also answer at the root.
use std::path::PathBuf;

use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;

#[tokio::test]
async fn everything_follows_the_base_path() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/fixtures/seeds");
    for file in apply::manifest_files(&seeds).expect("seeds") {
        apply::apply_all(&client, apply::read_documents(&file).expect("docs"))
            .await
            .expect("seed applies");
    }
    let (base, _state) = crate::kit::serve_at(&client, "/portico").await;
    // Started second: were the base path process-wide, one of them would be wrong.
    let (root, _root_state) = crate::kit::serve(&client, None).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    let status = |path: &'static str| {
        let http = http.clone();
        let url = format!("{base}{path}");
        async move {
            http.get(url)
                .send()
                .await
                .expect("request")
                .status()
                .as_u16()
        }
    };

    let page = http
        .get(format!("{base}/portico/crds"))
        .send()
        .await
        .expect("page");
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"]
        .to_str()
        .expect("csp")
        .to_string();
    let html = page.text().await.expect("html");
    // Inline scripts run only by this response's nonce; no 'unsafe-inline' scripts.
    let nonce = html
        .split("nonce=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the hydration script carries a nonce");
    assert!(policy.contains(&format!("'nonce-{nonce}'")), "{policy}");
    let scripts = policy
        .split(';')
        .find(|d| d.trim().starts_with("script-src"))
        .expect("script-src");
    assert!(!scripts.contains("unsafe-inline"), "{policy}");
    assert!(policy.contains("frame-ancestors 'none'"));
    assert!(
        html.contains(r#"data-base="/portico""#),
        "the browser learns the base"
    );
    assert!(
        html.contains(r#"href="/portico/pkg/portico.css""#),
        "the stylesheet"
    );
    assert!(
        html.contains("/portico/pkg/portico.js"),
        "the hydration script"
    );
    assert!(
        html.contains(r#"href="/portico/r/iksoon.test.com/v1/crdplural""#),
        "navigation links"
    );
    assert!(!html.contains(r#"href="/r/"#), "no link escapes the base");

    assert_eq!(status("/crds").await, 404, "nothing outside the base");
    assert_eq!(status("/healthz").await, 200);
    assert_eq!(status("/portico/healthz").await, 200);
    assert_eq!(status("/readyz").await, 200);
    // The home page is the base itself; the site's root and the base with a slash
    // lead there.
    for start in ["/", "/portico/"] {
        let page = http
            .get(format!("{base}{start}"))
            .send()
            .await
            .expect("start page");
        assert_eq!(page.status(), 303, "{start}");
        assert_eq!(page.headers()["location"], "/portico", "{start}");
    }
    let home = http
        .get(format!("{base}/portico"))
        .send()
        .await
        .expect("home");
    assert_eq!(home.status(), 200);
    let html = home.text().await.expect("html");
    assert!(
        html.contains(r#"data-testid="home-live-status""#),
        "{html:.300}"
    );

    let server_fn = http
        .post(format!("{base}/portico/api/crds"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .expect("server function");
    assert_eq!(server_fn.status(), 200);
    assert!(server_fn.text().await.expect("body").contains("CrdKind"));
    let live = http
        .get(format!("{base}/portico/api/live/crds"))
        .send()
        .await
        .expect("live");
    assert_eq!(live.status(), 200);
    assert_eq!(live.headers()["content-type"], "text/event-stream");

    // The instance at the root is unaffected by its neighbour's base path.
    let at_root = http
        .get(format!("{root}/crds"))
        .send()
        .await
        .expect("root instance page");
    assert_eq!(at_root.status(), 200);
    let html = at_root.text().await.expect("html");
    assert!(html.contains(r#"data-base="""#), "{html:.200}");
    assert!(html.contains(r#"href="/r/iksoon.test.com/v1/crdplural""#));
    assert!(
        !html.contains("/portico/"),
        "no link carries the other base"
    );
    let home = http.get(format!("{root}/")).send().await.expect("root");
    assert_eq!(home.status(), 200);
    assert!(
        home.text()
            .await
            .expect("html")
            .contains(r#"data-testid="home-live-status""#)
    );
}
