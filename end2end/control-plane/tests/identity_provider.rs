//! The local cluster's identity provider: the API server accepts Dex's ID tokens for
//! Portico's client and names people and groups with the `oidc:` prefix; a token
//! altered on the way, or for another audience, is not accepted.
// Tests stop loudly at the first surprise.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use portico_control_plane::identity_provider::IdentityProvider;
use portico_control_plane::{ControlPlane, StartOptions};
use serde_json::{Value, json};

fn client(provider: &IdentityProvider) -> reqwest::blocking::Client {
    let ca = std::fs::read(&provider.ca_file).unwrap();
    reqwest::blocking::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap())
        .no_proxy()
        .build()
        .unwrap()
}

/// An ID token for `email` through the provider's password grant.
fn id_token(provider: &IdentityProvider, email: &str) -> String {
    let answer: Value = client(provider)
        .post(format!("{}/token", provider.issuer))
        .form(&[
            ("grant_type", "password"),
            ("username", email),
            ("password", provider.password),
            ("scope", "openid email groups"),
            ("client_id", provider.client_id),
        ])
        .send()
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .unwrap();
    answer["id_token"].as_str().unwrap().to_string()
}

/// Who the API server says the bearer of `token` is (status and user info).
fn review(plane: &ControlPlane, provider: &IdentityProvider, token: &str) -> (u16, Value) {
    let response = client(provider)
        .post(format!(
            "{}/apis/authentication.k8s.io/v1/selfsubjectreviews",
            plane.server_url()
        ))
        .bearer_auth(token)
        .json(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}))
        .send()
        .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().unwrap_or(Value::Null);
    (status, body["status"]["userInfo"].clone())
}

#[test]
fn the_api_server_trusts_the_providers_tokens_with_prefixed_names_only() {
    let plane = ControlPlane::start_opts(StartOptions {
        identity_provider: true,
        ..StartOptions::default()
    })
    .unwrap();
    let provider = plane.identity_provider().unwrap().clone();

    let ada = id_token(&provider, "ada@example.com");
    let (status, user) = review(&plane, &provider, &ada);
    assert_eq!(status, 201, "{user}");
    assert_eq!(user["username"], "oidc:ada@example.com");
    let groups: Vec<&str> = user["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(groups.contains(&"oidc:dev"), "{groups:?}");
    assert!(
        groups
            .iter()
            .all(|g| g.starts_with("oidc:") || *g == "system:authenticated"),
        "{groups:?}"
    );

    let (_, eve) = review(&plane, &provider, &id_token(&provider, "eve@example.com"));
    assert_eq!(eve["username"], "oidc:eve@example.com");
    assert_eq!(eve["groups"], json!(["system:authenticated"]));

    // Ada's token with its claims changed on the way (another name, more groups): the
    // signature no longer matches.
    use base64::Engine;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = ada.split('.').collect();
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    claims["email"] = json!("root@example.com");
    claims["groups"] = json!(["dev", "admins"]);
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        parts[2]
    );
    assert_eq!(review(&plane, &provider, &forged).0, 401);
}
