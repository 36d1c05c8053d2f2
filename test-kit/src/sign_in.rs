//! Signing in to Portico in token mode, as a browser does: the session cookie, or
//! Portico's answer whatever it is.

use crate::people::account_token;

/// Signs in to Portico at `origin` (token mode) with `token`: the `name=value` of the
/// session cookie, for a Cookie header.
pub async fn sign_in(origin: &str, token: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    sign_in_from(&http, origin, token, None).await
}

/// As [`sign_in`], with `http` (redirects not followed), from `address` as the proxy
/// in front says (`X-Forwarded-For`): sign-in attempts are counted per address.
pub async fn sign_in_from(
    http: &reqwest::Client,
    origin: &str,
    token: &str,
    address: Option<&str>,
) -> String {
    let mut request = http
        .post(format!("{origin}/auth/login"))
        .header("origin", origin);
    if let Some(address) = address {
        request = request.header("x-forwarded-for", address);
    }
    let signed_in = request
        .form(&[("token", token)])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303, "signed in");
    signed_in.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_string()
}

/// Portico's answer at `origin` to a sign-in with `token` (redirects not followed),
/// whatever it is.
pub async fn sign_in_answer(origin: &str, token: &str) -> reqwest::Response {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
        .post(format!("{origin}/auth/login"))
        .header("origin", origin)
        .form(&[("token", token)])
        .send()
        .await
        .expect("a sign-in answers")
}

/// A new ServiceAccount `account` in `ns`, signed in to Portico at `origin` (token
/// mode): its session cookie's `name=value`.
pub async fn signed_in_account(
    client: &kube::Client,
    origin: &str,
    ns: &str,
    account: &str,
) -> String {
    sign_in(origin, &account_token(client, ns, account).await).await
}
