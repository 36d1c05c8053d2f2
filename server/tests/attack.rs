//! The attack script: hostile requests against a locally served Portico in each
//! identity mode, on a real API server. Prints a table of attempts and outcomes
//! (`scripts/attack.sh`, or `cargo test -p server --test attack -- --nocapture`) and
//! fails unless every attempt was refused or bounded and nothing was written.
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::pki::Pki;
use kube::api::Api;
use portico_control_plane::cluster::TestCluster;
use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use portico_server::reconcile::stack::Stack;
use portico_server::watch::limits::LiveLimits;
use serde_json::json;

/// One hostile request and what came of it.
struct Attempt {
    mode: &'static str,
    what: String,
    outcome: String,
    held: bool,
}

#[derive(Default)]
struct Report(Vec<Attempt>);

impl Report {
    fn record(&mut self, mode: &'static str, what: &str, outcome: String, held: bool) {
        self.0.push(Attempt {
            mode,
            what: what.to_string(),
            outcome,
            held,
        });
    }

    /// Records a request refused with one of `expected` statuses.
    fn expect(&mut self, mode: &'static str, what: &str, status: Option<u16>, expected: &[u16]) {
        let outcome = status.map_or("connection refused".to_string(), |s| s.to_string());
        let held = status.is_none_or(|s| expected.contains(&s));
        self.record(mode, what, outcome, held);
    }

    fn print_and_check(&self) {
        let width = self.0.iter().map(|a| a.what.len()).max().unwrap_or(10);
        println!(
            "\n| mode | attempt{} | outcome | held |",
            " ".repeat(width - 7)
        );
        println!("|---|{}|---|---|", "-".repeat(width + 2));
        for a in &self.0 {
            println!(
                "| {} | {:width$} | {} | {} |",
                a.mode,
                a.what,
                a.outcome,
                if a.held { "yes" } else { "NO" }
            );
        }
        let broken: Vec<_> = self.0.iter().filter(|a| !a.held).map(|a| &a.what).collect();
        assert!(broken.is_empty(), "attempts that got through: {broken:?}");
    }
}

fn stack(ns: &str, name: &str, spec: serde_json::Value) -> String {
    json!({"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
           "metadata": {"name": name, "namespace": ns}, "spec": spec})
    .to_string()
}

async fn status(request: reqwest::RequestBuilder) -> Option<u16> {
    request.send().await.ok().map(|r| r.status().as_u16())
}

/// A submit of `object` (not a dry run) with `headers`, from `origin`.
fn submit(
    http: &reqwest::Client,
    base: &str,
    headers: &[(&str, &str)],
    object: &str,
) -> reqwest::RequestBuilder {
    let mut request = http
        .post(format!("{base}/api/submit"))
        .header("origin", base)
        .form(&[("object", object), ("dry_run", "false")]);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request
}

async fn admin_config() -> kube::Config {
    portico_server::kube::config::config(Some(TestCluster::shared().admin_kubeconfig()), None)
        .await
        .expect("admin config")
}

#[tokio::test]
async fn every_hostile_request_is_refused_or_bounded_and_nothing_is_written() {
    let admin = common::admin_with_stack_crd().await;
    let ns = common::fresh_namespace(&admin, "attack").await;
    let mut report = Report::default();
    // The forged group really is cluster-admin: believing it would be fatal.
    common::bind_group_to_cluster_admin(&admin, "kubeadm:cluster-admins").await;
    common::until_subject_may(
        &admin,
        ("greedy", &["kubeadm:cluster-admins"]),
        "watch",
        ("portico.dev", "stacks"),
        Some(&ns),
    )
    .await;
    let forged = [
        ("x-forwarded-user", "mallory"),
        ("x-forwarded-groups", "system:masters"),
    ];

    // Proxy mode: only the proxy's client certificate makes headers count.
    let pki = Pki::new();
    let proxy = IdentityConfig {
        mode: IdentityMode::Proxy,
        ..IdentityConfig::local()
    };
    let limits = LiveLimits {
        streams_per_person: 16,
        feeds_per_person: 32,
        ..LiveLimits::default()
    };
    let (base, _) = common::serve_with_tls(
        &admin,
        Some((proxy, admin_config().await)),
        Some(pki.tls()),
        Some(limits),
    )
    .await;
    let object = stack(&ns, "pwned", json!({"choice": "tomcat"}));
    let callers = [
        ("forged headers, no client certificate", None, vec![401]),
        (
            "forged headers, proxy CA cert for another name",
            Some(&pki.wrong_name),
            vec![401],
        ),
        // A certificate from another CA ends the TLS handshake: no status at all.
        (
            "forged headers, rogue CA cert with the proxy's name",
            Some(&pki.rogue),
            vec![],
        ),
    ];
    for (what, certificate, refused) in callers {
        let http = pki.client(certificate.map(String::as_str));
        let s = status(submit(&http, &base, &forged, &object)).await;
        report.expect("proxy", what, s, &refused);
    }
    let through = pki.client(Some(&pki.proxy));
    let two_users = [("x-forwarded-user", "ada"), ("x-forwarded-user", "admin")];
    let s = status(submit(&through, &base, &two_users, &object)).await;
    report.expect("proxy", "two user headers through the proxy", s, &[401]);
    // Through the real proxy, system:masters is dropped: mallory is nobody special.
    let response = submit(&through, &base, &forged, &object)
        .send()
        .await
        .expect("submit");
    let body: serde_json::Value = response.json().await.unwrap_or_default();
    report.record(
        "proxy",
        "system:masters group through the proxy",
        format!("{}", body["Rejected"]["code"]),
        body["Rejected"]["code"] == 403,
    );
    // 500 live views opened by one person, held open.
    let mut held = Vec::new();
    let mut refused = 0;
    for i in 0..500 {
        let url = format!(
            "{base}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}&label_selector=a%3Db{i}"
        );
        let response = through
            .get(url)
            .header("x-forwarded-user", "greedy")
            .header("x-forwarded-groups", "kubeadm:cluster-admins")
            .send()
            .await;
        match response {
            Ok(r) if r.status().as_u16() == 200 => held.push(r),
            Ok(r) if r.status().as_u16() == 429 => refused += 1,
            _ => {}
        }
    }
    report.record(
        "proxy",
        "500 live views opened by one person",
        format!("{} open, {refused} refused (429)", held.len()),
        held.len() <= 16 && held.len() + refused == 500,
    );
    drop(held);
    let long = format!(
        "{base}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}&label_selector={}",
        "a".repeat(10_000)
    );
    let s = status(through.get(long).header("x-forwarded-user", "greedy")).await;
    report.expect("proxy", "a 10,000-byte selector", s, &[400, 414, 431]);

    // Token mode: only a sealed session counts.
    let token = IdentityConfig {
        mode: IdentityMode::Token,
        sessions: Some(SessionKey::random().expect("key")),
        ..IdentityConfig::local()
    };
    let (base, _) = common::serve(&admin, Some((token, admin_config().await))).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    let s = status(submit(&http, &base, &forged, &object)).await;
    report.expect("token", "identity headers instead of a session", s, &[401]);
    let oversized = format!("__Host-portico_session=k.{}", "A".repeat(16_000));
    let s = status(submit(
        &http,
        &base,
        &[("cookie", oversized.as_str())],
        &object,
    ))
    .await;
    report.expect("token", "a 16 KB forged session cookie", s, &[401, 431]);
    let forged_cookie = "__Host-portico_session=00000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let s = status(submit(&http, &base, &[("cookie", forged_cookie)], &object)).await;
    report.expect(
        "token",
        "a session cookie sealed with another key",
        s,
        &[401],
    );
    let mut limited = 0;
    for _ in 0..60 {
        let attempt = http
            .post(format!("{base}/auth/login"))
            .header("origin", &base)
            .form(&[("token", "guess")])
            .send()
            .await
            .map(|r| r.status().as_u16());
        if attempt.is_ok_and(|s| s == 429) {
            limited += 1;
        }
    }
    report.record(
        "token",
        "60 token guesses in a row",
        format!("{limited} refused (429) before reaching the API server"),
        limited > 0,
    );

    // Local mode (the developer's own machine): requests still cannot escape.
    let (base, _) = common::serve(&admin, None).await;
    let plain = reqwest::Client::new();
    let big = "x".repeat(3 * 1024 * 1024);
    let post = |object: &str, header: (&str, &str)| {
        plain
            .post(format!("{base}/api/submit"))
            .header(header.0, header.1)
            .form(&[("object", object), ("dry_run", "false")])
    };
    // DNS rebinding: a page at rebind.example:PORT re-resolved to 127.0.0.1 sends its
    // own name as Host, and its Origin agrees with it.
    let port = base.rsplit(':').next().unwrap_or("3000");
    let rebound = format!("rebind.example:{port}");
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "rebound"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:unauthenticated"}]}).to_string();
    let s = status(
        plain
            .post(format!("{base}/api/submit"))
            .header("host", &rebound)
            .header("origin", format!("http://{rebound}"))
            .form(&[("object", binding.as_str()), ("dry_run", "false")]),
    )
    .await;
    report.expect(
        "local",
        "DNS rebinding: submit a ClusterRoleBinding",
        s,
        &[421],
    );
    let s = status(
        plain
            .get(format!("{base}/api/live"))
            .header("host", &rebound),
    )
    .await;
    report.expect("local", "DNS rebinding: open /api/live", s, &[421]);
    let s = status(plain.get(format!("{base}/crds")).header("host", &rebound)).await;
    report.expect("local", "DNS rebinding: read a page", s, &[421]);
    let s = status(post(&big, ("origin", &base))).await;
    report.expect("local", "a 3 MiB body", s, &[413]);
    let s = status(post(&object, ("origin", "https://evil.example"))).await;
    report.expect("local", "a cross-site submit (Origin elsewhere)", s, &[403]);
    let s = status(post(&object, ("sec-fetch-site", "cross-site"))).await;
    report.expect("local", "a cross-site submit (Sec-Fetch-Site)", s, &[403]);
    for name in ["../../secrets", "a%2Fb", "x?watch=1", "a#b"] {
        let crafted = stack(&ns, name, json!({"choice": "tomcat"}));
        let response = submit(&plain, &base, &[], &crafted)
            .send()
            .await
            .expect("submit");
        let code = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        let rejected = body["Rejected"]["code"].as_u64().map(|c| c as u16);
        report.record(
            "local",
            &format!("a Stack named {name:?}"),
            format!(
                "{code} {}",
                rejected.map(|c| c.to_string()).unwrap_or_default()
            ),
            code >= 400 || rejected.is_some_and(|c| c >= 400),
        );
    }
    // A page cannot set its status once streaming; it must say "not found" and fetch
    // nothing from another path.
    let page = plain
        .get(format!(
            "{base}/r/portico.dev/v1alpha1/stacks/{ns}/..%2F..%2Fx"
        ))
        .send()
        .await
        .expect("page");
    let code = page.status().as_u16();
    let body = page.text().await.unwrap_or_default().to_lowercase();
    report.record(
        "local",
        "an object page for ..%2F..%2Fx",
        format!("{code}, says not found: {}", body.contains("not found")),
        matches!(code, 400 | 404) || body.contains("not found"),
    );

    // Nothing got written by any of it.
    let stacks: Api<Stack> = Api::namespaced(admin.clone(), &ns);
    let written = stacks.list(&Default::default()).await.expect("list").items;
    report.record(
        "all",
        "Stacks written in the target namespace",
        written.len().to_string(),
        written.is_empty(),
    );
    report.print_and_check();
}
