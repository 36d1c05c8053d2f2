//! Benchmark of single sign-on's renewal path against a real identity provider (Dex)
//! and a real kube-apiserver that trusts it. Prints its figures; run with
//! `cargo bench -p server --bench sign_in` (env BENCH_RENEWALS changes the count).
//!
//! 1. Renewing an ID token: the floor is a bare HTTP client posting the refresh grant
//!    to Dex's token endpoint; Portico's path (`OidcProvider::refresh`) adds discovery
//!    reuse and the ID token's verification (signature, issuer, audience, expiry).
//! 2. The API server's first answer to a renewed token (SelfSubjectReview), the
//!    check Portico makes once at sign-in.
// Benchmarks stop loudly at the first surprise.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::time::{Duration, Instant};

use portico_control_plane::identity_provider::IdentityProvider;
use portico_control_plane::{ControlPlane, StartOptions};
use portico_server::auth::oidc::{OidcProvider, OidcSettings};
use serde_json::Value;

fn http(provider: &IdentityProvider) -> reqwest::Client {
    let ca = std::fs::read(&provider.ca_file).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .no_proxy()
        .build()
        .unwrap()
}

async fn token_request(
    client: &reqwest::Client,
    provider: &IdentityProvider,
    form: &[(&str, &str)],
) -> Value {
    client
        .post(format!("{}/token", provider.issuer))
        .form(form)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A refresh token for Ada, through the password grant.
async fn refresh_token(client: &reqwest::Client, provider: &IdentityProvider) -> String {
    let answer = token_request(
        client,
        provider,
        &[
            ("grant_type", "password"),
            ("username", "ada@example.com"),
            ("password", provider.password),
            ("scope", "openid email groups offline_access"),
            ("client_id", provider.client_id),
        ],
    )
    .await;
    answer["refresh_token"].as_str().unwrap().to_string()
}

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

        // 1a. The floor: the refresh grant with a bare client (each answer's refresh
        // token is the next request's: Dex rotates them).
        let mut refresh = refresh_token(&client, &provider).await;
        let mut floor = Vec::with_capacity(renewals);
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
        let portico = OidcProvider::new(OidcSettings {
            issuer: provider.issuer.clone(),
            client_id: provider.client_id.to_string(),
            client_secret: None,
            redirect_url: "http://127.0.0.1/auth/callback".into(),
            scopes: vec!["openid".into(), "email".into(), "groups".into(), "offline_access".into()],
            auth_params: vec![],
            ca_pem: Some(std::fs::read(&provider.ca_file).unwrap()),
            post_logout_redirect_url: None,
        })
        .expect("settings");
        portico.warm_up().await;
        let mut refresh = refresh_token(&client, &provider).await;
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
    });
}
