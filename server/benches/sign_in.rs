//! Benchmark of single sign-on's renewal path against a real identity provider (Dex)
//! and a real kube-apiserver that trusts it. Prints its figures; run with
//! `cargo bench -p server --bench sign_in` (env BENCH_RENEWALS changes the count).
//!
//! Each chain of renewals starts from a sign-in through Dex's login form.
//! 1. Renewing an ID token: the floor is a bare HTTP client posting the refresh grant
//!    to Dex's token endpoint; Portico's path (`OidcProvider::refresh`) adds discovery
//!    reuse and the ID token's verification (signature, issuer, audience, expiry).
//! 2. The API server's first answer to a renewed token (SelfSubjectReview), the
//!    check Portico makes once at sign-in.
// Benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::time::{Duration, Instant};

use portico_control_plane::identity_provider::IdentityProvider;
use portico_control_plane::{ControlPlane, StartOptions};
use portico_server::auth::oidc::{OidcProvider, OidcSettings};
use serde_json::Value;

fn http(provider: &IdentityProvider) -> reqwest::Client {
    let ca = std::fs::read(&provider.ca_file).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .unwrap()
}

async fn token_request(
    client: &reqwest::Client,
    provider: &IdentityProvider,
    form: &[(&str, &str)],
) -> Value {
    let response = client
        .post(format!("{}/token", provider.issuer))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let body = response.text().await.unwrap();
    assert!(
        status.is_success(),
        "{status} from the token endpoint for {:?}: {body}",
        form[0]
    );
    serde_json::from_str(&body).unwrap()
}

/// Ada's sign-in through Dex's login form, as a browser does it (redirects followed
/// by hand, cookies carried): the code and state Dex sends to `redirect`. (Dex's
/// password grant gives refresh tokens its sessions cannot renew.)
async fn sign_in(
    client: &reqwest::Client,
    provider: &IdentityProvider,
    auth_url: &str,
) -> (String, String) {
    let mut cookies: Vec<String> = Vec::new();
    let mut url = auth_url.to_string();
    let mut form: Option<Vec<(&str, &str)>> = None;
    for _ in 0..10 {
        let request = match form.take() {
            Some(fields) => client.post(&url).form(&fields),
            None => client.get(&url),
        };
        let response = request
            .header("cookie", cookies.join("; "))
            .send()
            .await
            .unwrap();
        for set in response.headers().get_all("set-cookie") {
            if let Some(pair) = set.to_str().unwrap().split(';').next() {
                cookies.push(pair.to_string());
            }
        }
        if let Some(next) = response.headers().get("location") {
            let next = next.to_str().unwrap();
            if next.starts_with(REDIRECT) {
                let parsed = reqwest::Url::parse(next).unwrap();
                let get = |name: &str| {
                    parsed
                        .query_pairs()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.to_string())
                        .unwrap()
                };
                return (get("code"), get("state"));
            }
            url = response.url().join(next).unwrap().to_string();
            continue;
        }
        // The login form: posted back to where it was served.
        assert!(
            response.status().is_success(),
            "{} at {url}",
            response.status()
        );
        form = Some(vec![
            ("login", "ada@example.com"),
            ("password", provider.password),
        ]);
    }
    panic!("Dex's sign-in did not come back to {REDIRECT}");
}

/// Where Dex sends the code (a public client may use any loopback address).
const REDIRECT: &str = "http://127.0.0.1:1/auth/callback";

fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1000.0;
    let mean = times.iter().map(Duration::as_secs_f64).sum::<f64>() / times.len() as f64 * 1000.0;
    println!(
        "{name:<52} n={:<4} p50 {:>6.1} ms  p99 {:>6.1} ms  mean {:>6.1} ms",
        times.len(),
        at(0.5),
        at(0.99),
        mean
    );
}

fn main() {
    let renewals: usize = std::env::var("BENCH_RENEWALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let plane = ControlPlane::start_opts(StartOptions {
        identity_provider: true,
        ..StartOptions::default()
    })
    .expect("control plane");
    let provider = plane
        .identity_provider()
        .expect("identity provider")
        .clone();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = http(&provider);
        let portico = OidcProvider::new(OidcSettings {
            issuer: provider.issuer.clone(),
            client_id: provider.client_id.to_string(),
            client_secret: None,
            redirect_url: REDIRECT.into(),
            scopes: ["openid", "email", "groups", "offline_access"]
                .map(String::from)
                .to_vec(),
            auth_params: vec![],
            ca_pem: Some(std::fs::read(&provider.ca_file).unwrap()),
            post_logout_redirect_url: None,
        })
        .expect("settings");
        portico.warm_up().await;
        // A whole sign-in as Portico makes it (PKCE, state, nonce, the ID token
        // verified): its refresh token starts each chain of renewals.
        let signed_in = || async {
            let begun = portico.begin().await.expect("begun");
            let (code, state) = sign_in(&client, &provider, &begun.url).await;
            assert_eq!(state, begun.state);
            let started = Instant::now();
            let tokens = portico
                .finish(code, begun.verifier, begun.nonce)
                .await
                .expect("signed in");
            (started.elapsed(), tokens.provider.refresh.expect("a refresh token"))
        };

        // 1a. The floor: the refresh grant with a bare client (each answer's refresh
        // token is the next request's: Dex rotates them).
        let (_, mut refresh) = signed_in().await;
        let mut floor = Vec::with_capacity(renewals);
        let dex_log = plane.dir().join("dex.log");
        std::panic::set_hook(Box::new(move |info| {
            let log = std::fs::read_to_string(&dex_log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(6).collect();
            eprintln!("{info}\nDex's log ends:\n{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
        }));
        for _ in 0..renewals {
            let started = Instant::now();
            let answer = token_request(
                &client,
                &provider,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh.as_str()),
                    ("client_id", provider.client_id),
                ],
            )
            .await;
            floor.push(started.elapsed());
            refresh = answer["refresh_token"].as_str().unwrap().to_string();
        }

        // 1b. Portico's renewal, verification included.
        let (exchange, mut refresh) = signed_in().await;
        let mut ours = Vec::with_capacity(renewals);
        let mut id_token = String::new();
        for _ in 0..renewals {
            let started = Instant::now();
            let renewed = portico.refresh(&refresh).await.expect("renewed");
            ours.push(started.elapsed());
            refresh = renewed.provider.refresh.expect("a refresh token");
            id_token = renewed.id_token;
        }

        // 2. The API server's review of a renewed token.
        let mut reviews = Vec::with_capacity(renewals);
        for _ in 0..renewals {
            let started = Instant::now();
            let status = client
                .post(format!(
                    "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    plane.server_url()
                ))
                .bearer_auth(&id_token)
                .json(&serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
                .send()
                .await
                .unwrap()
                .status();
            reviews.push(started.elapsed());
            assert_eq!(status.as_u16(), 201);
        }

        println!("\nsingle sign-on renewal, {renewals} in a row, Dex and kube-apiserver on loopback");
        summary("floor: refresh grant, bare HTTP client", floor);
        summary("Portico: OidcProvider::refresh (verified)", ours);
        summary("API server: SelfSubjectReview with the new token", reviews);
        println!("sign-in: the code exchange with the ID token verified took {:.1} ms", exchange.as_secs_f64() * 1000.0);
    });
}
