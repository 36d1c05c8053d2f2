//! The attack script: hostile requests against a locally served Portico in token and
//! local modes, on a real API server. Prints a table of attempts and outcomes
//! (`scripts/attack.sh`, or `cargo test -p server --test it -- attack:: --nocapture`) and
//! fails unless every attempt was refused or bounded and nothing was written.
use kube::api::Api;
use portico_server::live::budgets::limits::LiveLimits;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

use crate::kit::socket;

/// One named attack, what should come of it and what did.
struct Attack {
    mode: &'static str,
    name: String,
    expected: String,
    got: String,
    held: bool,
}

/// The attacks of one test, printed as a table (`attack | expected | got`); the test
/// fails naming every attack that got through, with what it expected and got.
#[derive(Default)]
struct Report(Vec<Attack>);

impl Report {
    fn record(&mut self, mode: &'static str, name: &str, expected: &str, got: String, held: bool) {
        self.0.push(Attack {
            mode,
            name: name.to_string(),
            expected: expected.to_string(),
            got,
            held,
        });
    }

    /// Records a request that must be refused with one of `expected` statuses. A request
    /// that got no answer at all (a reset, a timeout) did not show the refusal: it fails.
    fn expect(
        &mut self,
        mode: &'static str,
        name: &str,
        status: Result<u16, String>,
        expected: &[u16],
    ) {
        let held = status.as_ref().is_ok_and(|s| expected.contains(s));
        let got = match status {
            Ok(s) => s.to_string(),
            Err(e) => format!("no answer ({e})"),
        };
        let expected = expected
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(" or ");
        self.record(mode, name, &expected, got, held);
    }

    fn print_and_check(&self) {
        println!("\n| mode | attack | expected | got | refused |");
        println!("|---|---|---|---|---|");
        for a in &self.0 {
            println!(
                "| {} | {} | {} | {} | {} |",
                a.mode,
                a.name,
                a.expected,
                a.got,
                if a.held { "yes" } else { "NO" }
            );
        }
        let broken: Vec<String> = self
            .0
            .iter()
            .filter(|a| !a.held)
            .map(|a| {
                format!(
                    "{} ({}): expected {}, got {}",
                    a.name, a.mode, a.expected, a.got
                )
            })
            .collect();
        assert!(broken.is_empty(), "attacks that got through: {broken:#?}");
    }
}

fn stack(ns: &str, name: &str, spec: serde_json::Value) -> String {
    json!({"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
           "metadata": {"name": name, "namespace": ns}, "spec": spec})
    .to_string()
}

/// The status a request was answered with, or why it got no answer.
async fn status(request: reqwest::RequestBuilder) -> Result<u16, String> {
    request
        .send()
        .await
        .map(|r| r.status().as_u16())
        .map_err(|e| e.to_string())
}

/// A submit of `object` (not a dry run) with `headers`, from `origin`.
/// The submit endpoint's JSON body for `object` (JSON text), written for real.
fn submission(object: &str) -> serde_json::Value {
    let object: serde_json::Value = serde_json::from_str(object).unwrap_or_default();
    json!({"object": object, "dry_run": false})
}

fn submit(
    http: &reqwest::Client,
    base: &str,
    headers: &[(&str, &str)],
    object: &str,
) -> reqwest::RequestBuilder {
    let mut request = http
        .post(format!("{base}/api/submit"))
        .header("origin", base)
        .json(&submission(object));
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    request
}

/// Reads an SSE response until an event named `event` arrives; false at its end.
async fn until_event(response: reqwest::Response, event: &str) -> bool {
    use futures::StreamExt;
    let wanted = format!("event: {event}");
    let mut seen = String::new();
    let mut body = response.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if seen.contains(&wanted) {
            return true;
        }
        // Keep only a tail: snapshots of the big lists are megabytes.
        if seen.len() > 4096 {
            seen = seen.split_off(seen.len() - 64);
        }
    }
    false
}

#[tokio::test]
async fn one_person_cannot_fill_the_portals_memory_and_others_stay_live() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "flood").await;
    let mut report = Report::default();
    // A kind whose table shows a 64 KiB column: 40 objects make each list ~2.5 MiB.
    let crd: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "blobs.flood.test"},
        "spec": {"group": "flood.test", "scope": "Namespaced",
            "names": {"plural": "blobs", "kind": "Blob"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": [{"name": "Blob", "type": "string", "jsonPath": ".spec.blob"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .expect("CRD");
    portico_control_plane::apply::apply_all(&admin, vec![crd])
        .await
        .expect("the CRD applies");
    let resource = kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("flood.test", "v1", "Blob"),
        "blobs",
    );
    let blobs: Api<kube::api::DynamicObject> = Api::namespaced_with(admin.clone(), &ns, &resource);
    for i in 0..40 {
        let blob: kube::api::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "flood.test/v1", "kind": "Blob",
            "metadata": {"name": format!("blob-{i}")},
            "spec": {"blob": "x".repeat(64 * 1024)}
        }))
        .expect("object");
        blobs
            .create(&Default::default(), &blob)
            .await
            .expect("a blob");
    }
    // The portal as a process of its own, so that its resident memory is its own.
    const BUDGET_MIB: usize = 16;
    let (base, _portico, pid) = crate::kit::process::token_mode_portico(
        std::path::Path::new(env!("CARGO_BIN_EXE_portico")),
        portico_control_plane::cluster::TestCluster::shared().admin_kubeconfig(),
        &[
            "--max-live-mib-per-person",
            &BUDGET_MIB.to_string(),
            "--max-live-mib",
            &(3 * BUDGET_MIB).to_string(),
        ],
    )
    .await;
    let blobs_of = ("flood.test", "blobs");
    let mut sessions = Vec::new();
    for who in ["greedy", "ada"] {
        crate::kit::grant(
            &admin,
            &ns,
            &format!("read-{who}"),
            blobs_of,
            &["list", "watch"],
            who,
        )
        .await;
        sessions.push(crate::kit::signed_in_account(&admin, &base, &ns, who).await);
    }
    let http = reqwest::Client::new();
    let table = |selector: String, session: &str| {
        http.get(format!(
            "{base}/api/live/table?group=flood.test&version=v1&plural=blobs&namespace={ns}&label_selector={selector}"
        ))
        .header("cookie", session.to_string())
    };
    let before = crate::kit::rss_mb(pid, "VmRSS:");
    // 60 views of the same big list, each its own feed (a distinct selector that
    // matches everything), held open.
    let mut held = Vec::new();
    let mut unanswered = 0;
    let mut peak = before;
    for i in 0..60 {
        match table(format!("!absent{i}"), &sessions[0]).send().await {
            Ok(response) => held.push(until_event(response, "snapshot").await),
            Err(_) => unanswered += 1,
        }
        peak = peak.max(crate::kit::rss_mb(pid, "VmRSS:"));
    }
    let shown = held.iter().filter(|ok| **ok).count();
    let grown = peak - before;
    println!(
        "flood: {shown} of 60 big views shown (2.5 MiB each) at a {BUDGET_MIB} MiB budget, resident memory {before:.0} MB, peak {peak:.0} MB (+{grown:.0} MB)"
    );
    report.record(
        "token",
        "60 feeds of a 2.5 MiB list by one person",
        "at most 16 MiB of them shown (6)",
        format!("{shown} shown, {unanswered} unanswered"),
        shown <= BUDGET_MIB * 2 / 5 && unanswered == 0,
    );
    report.record(
        "token",
        "the same flood, the portal's resident memory (its own process)",
        "grows by under three times the budget, 48 MB (unbounded, measured: +184)",
        format!("+{grown:.0} MB"),
        grown < (3 * BUDGET_MIB) as f64,
    );
    let other = table("!absent-ada".to_string(), &sessions[1]).send().await;
    let live = match other {
        Ok(response) => until_event(response, "snapshot").await,
        Err(_) => false,
    };
    report.record(
        "token",
        "another person's view during the flood",
        "live (a snapshot arrives)",
        live.to_string(),
        live,
    );
    report.print_and_check();
}

/// A namespace of its own for one mode's attacks, and the Stack they try to write.
async fn target(prefix: &str) -> (kube::Client, String, String) {
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, prefix).await;
    let object = stack(&ns, "pwned", json!({"choice": "tomcat"}));
    (admin, ns, object)
}

/// The last row of every mode's report: nothing got written by any of it.
async fn nothing_written(report: &mut Report, mode: &'static str, admin: &kube::Client, ns: &str) {
    let stacks: Api<Stack> = Api::namespaced(admin.clone(), ns);
    let written = stacks.list(&Default::default()).await.expect("list").items;
    report.record(
        mode,
        "Stacks written in the target namespace",
        "0",
        written.len().to_string(),
        written.is_empty(),
    );
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
}

/// Token mode: only a sealed session counts.
#[tokio::test]
async fn in_token_mode_forged_identities_floods_and_guesses_are_refused() {
    let (admin, ns, object) = target("attack-token").await;
    let mut report = Report::default();
    // Believing these would be fatal: system:masters passes every authorization.
    let forged = [
        ("x-forwarded-user", "mallory"),
        ("x-forwarded-groups", "system:masters"),
    ];
    let limits = LiveLimits {
        streams_per_person: 16,
        feeds_per_person: 32,
        ..LiveLimits::default()
    };
    let (base, _) = crate::kit::serve_token_mode(&admin, Some(limits)).await;
    let http = no_redirects();
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
    // 500 live views opened by one signed-in person, held open.
    let reading = ["get", "list", "watch"];
    let stacks_of = ("portico.dev", "stacks");
    crate::kit::grant(&admin, &ns, "watch-greedy", stacks_of, &reading, "greedy").await;
    let greedy = crate::kit::signed_in_account(&admin, &base, &ns, "greedy").await;
    let mut held = Vec::new();
    let mut refused = 0;
    for i in 0..500 {
        let url = format!(
            "{base}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}&label_selector=a%3Db{i}"
        );
        match http.get(url).header("cookie", &greedy).send().await {
            Ok(r) if r.status().as_u16() == 200 => held.push(r),
            Ok(r) if r.status().as_u16() == 429 => refused += 1,
            _ => {}
        }
    }
    report.record(
        "token",
        "500 live views opened by one person",
        "at most 16 open, the rest 429",
        format!("{} open, {refused} refused (429)", held.len()),
        held.len() <= 16 && held.len() + refused == 500,
    );
    drop(held);
    let long = format!(
        "{base}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}&label_selector={}",
        "a".repeat(10_000)
    );
    let s = status(http.get(long).header("cookie", &greedy)).await;
    report.expect("token", "a 10,000-byte selector", s, &[400, 414, 431]);
    // Added columns: more than 8 is refused; a path nested far deeper than a parser's
    // stack is fit for opens a table whose column says why.
    let stacks_table = format!(
        "{base}/api/live/table?group=portico.dev&version=v1alpha1&plural=stacks&namespace={ns}"
    );
    let nine = (0..9)
        .map(|i| format!("C{i}:.a"))
        .collect::<Vec<_>>()
        .join(",");
    let s = status(
        http.get(&stacks_table)
            .query(&[("columns", nine.as_str())])
            .header("cookie", &greedy),
    )
    .await;
    report.expect("token", "a table with 9 added columns", s, &[400]);
    let deep = format!("DEEP:.a{}", "[?(@".repeat(120));
    let opened = http
        .get(&stacks_table)
        .query(&[("columns", deep.as_str())])
        .header("cookie", &greedy)
        .send()
        .await;
    let answered = match opened {
        Ok(r) if r.status().as_u16() == 200 => until_event(r, "snapshot").await,
        _ => false,
    };
    report.record(
        "token",
        "an added column's path 120 brackets deep",
        "the table opens (the column says why), the portal stays up",
        format!("snapshot received: {answered}"),
        answered,
    );
    let mut limited = 0;
    let mut other = Vec::new();
    for _ in 0..60 {
        let attempt = status(
            http.post(format!("{base}/auth/login"))
                .header("origin", &base)
                .form(&[("token", "guess")]),
        )
        .await;
        match attempt {
            Ok(429) => limited += 1,
            // The API server refused the guess: the sign-in page says so.
            Ok(401) => {}
            answer => other.push(answer),
        }
    }
    report.record(
        "token",
        "60 token guesses in a row",
        "each 401 or 429, some 429",
        format!("{limited} refused (429) before reaching the API server, other answers {other:?}"),
        limited > 0 && other.is_empty(),
    );
    locked_out_by_forged_claims(&mut report, &admin, &ns, &base).await;
    nothing_written(&mut report, "token", &admin, &ns).await;
    report.print_and_check();
}

/// Forged tokens naming a victim's subject, 40 of them from four loopback addresses
/// (each under the per-client bound), then the victim signs in from their own address
/// with their real token.
async fn locked_out_by_forged_claims(
    report: &mut Report,
    admin: &kube::Client,
    ns: &str,
    base: &str,
) {
    use base64::Engine;
    let victim_token = crate::kit::account_token(admin, ns, "victim").await;
    let claims = json!({"sub": crate::kit::account_user(ns, "victim")}).to_string();
    let forged = format!(
        "eyJhbGciOiJSUzI1NiJ9.{}.forged",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims)
    );
    let from = |last: u8| {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .local_address(std::net::IpAddr::from([127, 0, 0, last]))
            .build()
            .expect("http")
    };
    let mut answers = Vec::new();
    for attacker in 3..7 {
        let http = from(attacker);
        for _ in 0..10 {
            let attempt = http
                .post(format!("{base}/auth/login"))
                .header("origin", base)
                .form(&[("token", forged.as_str())]);
            answers.push(status(attempt).await);
        }
    }
    let refused = answers.iter().filter(|a| **a == Ok(401)).count();
    let victim = status(
        from(2)
            .post(format!("{base}/auth/login"))
            .header("origin", base)
            .form(&[("token", victim_token.as_str())]),
    )
    .await;
    report.record(
        "token",
        "40 forged tokens naming someone's subject from 4 addresses, then they sign in",
        "the forgeries 401, the person signed in (303)",
        format!("{refused} of 40 forgeries 401, the person {victim:?}"),
        refused == 40 && victim == Ok(303),
    );
}

/// Single sign-on mode: only a session that began at the provider counts. The security
/// review's tenant attack (the ingress controller's path, the proxy's headers naming an
/// administrators' group) meets a portal that believes no header.
#[tokio::test]
async fn with_single_sign_on_proxy_headers_forged_callbacks_and_open_redirects_are_refused() {
    let (admin, ns, object) = target("attack-oidc").await;
    let mut report = Report::default();
    let http = no_redirects();
    let (base, _) = crate::kit::serve_oidc_mode(&admin, "https://127.0.0.1:9/dex").await;
    let tenant = [
        ("x-auth-request-user", "mallory"),
        ("x-auth-request-groups", "kubeadm:cluster-admins"),
        ("x-forwarded-user", "mallory"),
        ("x-forwarded-groups", "system:masters"),
    ];
    let s = status(submit(&http, &base, &tenant, &object)).await;
    report.expect(
        "oidc",
        "the proxy's identity headers naming cluster-admins",
        s,
        &[401],
    );
    let page = http.get(format!("{base}/crds")).headers(
        tenant
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v.parse().ok()?)))
            .collect(),
    );
    let s = status(page).await;
    report.expect(
        "oidc",
        "a page with those headers (sent to sign in)",
        s,
        &[303],
    );
    let s = status(http.get(format!("{base}/auth/callback?code=stolen&state=guess"))).await;
    report.expect("oidc", "a callback no sign-in here began", s, &[400]);
    let s = status(
        http.get(format!("{base}/auth/callback?code=stolen&state=guess"))
            .header(
                "cookie",
                "__Host-portico_sso=00000000.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            ),
    )
    .await;
    report.expect("oidc", "a callback with a forged sign-in cookie", s, &[400]);
    // A browser drops tabs and line breaks when it reads a URL: `/\t/x` is `//x`.
    let elsewhere = [
        "//evil.example/steal",
        "/%09/evil.example",
        "/%0A/evil.example",
    ];
    let mut kept = Vec::new();
    for then in elsewhere {
        let login = http
            .get(format!("{base}/login?then={then}"))
            .send()
            .await
            .ok();
        let page = match login {
            Some(r) => r.text().await.unwrap_or_default(),
            None => String::new(),
        };
        if page.contains("evil.example") || !page.contains("then=%2F\"") {
            kept.push(then);
        }
    }
    report.record(
        "oidc",
        "a sign-in that returns to another site (//, tab, line break)",
        "Portico's start page each time",
        if kept.is_empty() {
            "then=/ (the site dropped) all 3".into()
        } else {
            format!("kept: {kept:?}")
        },
        kept.is_empty(),
    );
    nothing_written(&mut report, "oidc", &admin, &ns).await;
    report.print_and_check();
}

/// Local mode (the developer's own machine): requests still cannot escape.
#[tokio::test]
async fn in_local_mode_rebinding_cross_site_oversized_and_crafted_requests_are_refused() {
    let (admin, ns, object) = target("attack-local").await;
    let mut report = Report::default();
    let (base, _) = crate::kit::serve(&admin, None).await;
    let plain = reqwest::Client::new();
    let big = "x".repeat(3 * 1024 * 1024);
    let post = |body: serde_json::Value, header: (&str, &str)| {
        plain
            .post(format!("{base}/api/submit"))
            .header(header.0, header.1)
            .json(&body)
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
            .json(&submission(&binding)),
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
    // 40 live sockets at once by one person (in local mode, everyone is one).
    let mut sockets = Vec::new();
    let mut refused_sockets = Vec::new();
    for _ in 0..40 {
        match socket::open(&base, socket::LIVE, None, None).await {
            Ok(open) => sockets.push(open),
            Err(socket::Error::Http(r)) => refused_sockets.push(r.status().as_u16()),
            Err(_) => refused_sockets.push(0),
        }
    }
    report.record(
        "local",
        "40 live sockets by one person",
        "32 open, 8 refused 429",
        format!("{} open, refused {refused_sockets:?}", sockets.len()),
        sockets.len() == 32 && refused_sockets == [429; 8],
    );
    drop(sockets);
    let s = status(post(
        json!({"object": big, "dry_run": false}),
        ("origin", &base),
    ))
    .await;
    report.expect("local", "a 3 MiB body", s, &[413]);
    let s = status(post(
        submission(&object),
        ("origin", "https://evil.example"),
    ))
    .await;
    report.expect("local", "a cross-site submit (Origin elsewhere)", s, &[403]);
    let s = status(post(submission(&object), ("sec-fetch-site", "cross-site"))).await;
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
            "refused by the API server (422)",
            format!(
                "{code}, refused with {}",
                rejected.map(|c| c.to_string()).unwrap_or("nothing".into())
            ),
            code == 200 && rejected == Some(422),
        );
    }
    // The namespace of a new object becomes a path segment of the request: one that
    // would bend the URL is refused before any request is made.
    for namespace in [
        format!("{ns}/stacks/x"),
        format!("../{ns}"),
        "kube-system%2Fsecrets".to_string(),
    ] {
        let crafted = stack(&namespace, "bent", json!({"choice": "tomcat"}));
        let response = submit(&plain, &base, &[], &crafted)
            .send()
            .await
            .expect("submit");
        let code = response.status().as_u16();
        let body = response.text().await.unwrap_or_default();
        report.record(
            "local",
            &format!("a Stack in namespace {namespace:?}"),
            "refused: not a namespace name",
            format!("{code} {}", body.chars().take(120).collect::<String>()),
            code >= 400 && body.contains("is not a namespace name"),
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
        "400/404 or says not found",
        format!("{code}, says not found: {}", body.contains("not found")),
        matches!(code, 400 | 404) || body.contains("not found"),
    );
    nothing_written(&mut report, "local", &admin, &ns).await;
    report.print_and_check();
}
