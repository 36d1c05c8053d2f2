//! The identity provider as Portico's OpenID Connect client sees it: discovered from
//! the issuer's well-known document (again after a failure, never more than once per
//! [`REDISCOVER_AFTER`]), asked for the sign-in URL, the code exchange, refreshes and
//! the sign-out URL. ID tokens are verified here (signature, issuer, audience, expiry,
//! nonce) before Portico keeps them; the API server verifies them again on every call.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openidconnect::core::{CoreAuthenticationFlow, CoreClient, CoreIdToken, CoreIdTokenClaims};
use openidconnect::{
    AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndSessionUrl, EndpointMaybeSet,
    EndpointNotSet, EndpointSet, IssuerUrl, LogoutRequest, Nonce, OAuth2TokenResponse,
    PkceCodeChallenge, PkceCodeVerifier, PostLogoutRedirectUrl, ProviderMetadataWithLogout,
    RedirectUrl, RefreshToken, Scope, TokenResponse,
};

use crate::auth::session::{ProviderTokens, now_secs};

/// A failed discovery is tried again when next needed, but not sooner than this.
const REDISCOVER_AFTER: Duration = Duration::from_secs(5);
/// An ID token is renewed this long before it expires at most (half its lifetime for
/// shorter ones), so no request goes out with a token about to lapse.
const REFRESH_AHEAD: u64 = 60;
/// How long the provider has to answer one request.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("--oidc-{what} is not a valid URL: {reason}")]
    BadUrl { what: &'static str, reason: String },
    #[error("--oidc-ca-file is not a PEM certificate: {0}")]
    BadCa(String),
    #[error("cannot build the HTTP client for the identity provider: {0}")]
    Http(String),
    #[error("the identity provider at {issuer} cannot be reached or is misconfigured: {reason}")]
    Discovery { issuer: String, reason: String },
    #[error("the identity provider refused the sign-in: {0}")]
    Exchange(String),
    #[error("the identity provider returned no ID token")]
    NoIdToken,
    #[error("the identity provider's ID token did not verify: {0}")]
    Verify(String),
    #[error("the identity provider would not renew the sign-in: {0}")]
    Refresh(String),
    #[error("--oidc-auth-params: {0}")]
    BadAuthParam(String),
}

/// Parameters Portico sets itself; another value for one would undo PKCE, the state
/// or the nonce, or send the code elsewhere.
const OWN_PARAMS: [&str; 11] = [
    "response_type",
    "response_mode",
    "request",
    "request_uri",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
];

/// `name=value` items (from `--oidc-auth-params`), refusing Portico's own.
pub fn parse_auth_params(items: &[String]) -> Result<Vec<(String, String)>, OidcError> {
    items
        .iter()
        .map(|item| item.trim())
        .filter(|item| !item.is_empty())
        .map(|item| {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| OidcError::BadAuthParam(format!("{item:?} is not name=value")))?;
            let name = name.trim();
            if OWN_PARAMS.contains(&name) {
                return Err(OidcError::BadAuthParam(format!(
                    "{name} is set by Portico itself"
                )));
            }
            Ok((name.to_string(), value.trim().to_string()))
        })
        .collect()
}

/// What `--oidc-*` configure.
#[derive(Clone)]
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    /// None: a public client, proven by PKCE alone.
    pub client_secret: Option<String>,
    pub redirect_url: String,
    pub scopes: Vec<String>,
    /// Extra parameters for the authorization request (Google's
    /// `access_type=offline`, say).
    pub auth_params: Vec<(String, String)>,
    /// A private CA that signed the provider's certificate (PEM).
    pub ca_pem: Option<Vec<u8>>,
    /// Where the provider sends the browser after its own sign-out (registered there).
    pub post_logout_redirect_url: Option<String>,
}

type DiscoveredClient = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

struct Discovered {
    client: DiscoveredClient,
    end_session: Option<EndSessionUrl>,
}

/// A sign-in begun: where to send the browser, and what the callback must match.
pub struct Begun {
    pub url: String,
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

/// A verified ID token and how to keep it fresh.
pub struct Tokens {
    pub id_token: String,
    pub provider: ProviderTokens,
}

pub struct OidcProvider {
    settings: OidcSettings,
    issuer: IssuerUrl,
    redirect: RedirectUrl,
    post_logout: Option<PostLogoutRedirectUrl>,
    http: reqwest::Client,
    discovered: Mutex<Option<Arc<Discovered>>>,
    /// Held while a discovery is under way.
    discovering: tokio::sync::Mutex<()>,
    /// The last failed discovery: when, and why.
    last_failure: Mutex<Option<(Instant, String)>>,
}

fn bad_url(what: &'static str) -> impl FnOnce(openidconnect::url::ParseError) -> OidcError {
    move |e| OidcError::BadUrl {
        what,
        reason: e.to_string(),
    }
}

impl OidcProvider {
    /// Checks the settings; the provider is discovered on first use.
    pub fn new(settings: OidcSettings) -> Result<Self, OidcError> {
        let issuer = IssuerUrl::new(settings.issuer.clone()).map_err(bad_url("issuer"))?;
        let redirect =
            RedirectUrl::new(settings.redirect_url.clone()).map_err(bad_url("redirect-url"))?;
        let post_logout = settings
            .post_logout_redirect_url
            .clone()
            .map(PostLogoutRedirectUrl::new)
            .transpose()
            .map_err(bad_url("post-logout-redirect-url"))?;
        // No redirects: a provider answering the token endpoint with one would
        // otherwise have the code and verifier sent wherever it points.
        let mut http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT);
        if let Some(pem) = &settings.ca_pem {
            let ca =
                reqwest::Certificate::from_pem(pem).map_err(|e| OidcError::BadCa(e.to_string()))?;
            http = http.add_root_certificate(ca);
        }
        let http = http.build().map_err(|e| OidcError::Http(e.to_string()))?;
        Ok(Self {
            settings,
            issuer,
            redirect,
            post_logout,
            http,
            discovered: Mutex::default(),
            discovering: tokio::sync::Mutex::default(),
            last_failure: Mutex::default(),
        })
    }

    pub fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    pub fn client_id(&self) -> &str {
        &self.settings.client_id
    }

    /// The provider's endpoints and keys: cached, or fetched now. Callers arriving
    /// while a discovery is under way wait for it; after a failure the next attempt
    /// waits [`REDISCOVER_AFTER`], and callers meanwhile get the reason.
    async fn discovered(&self) -> Result<Arc<Discovered>, OidcError> {
        if let Some(found) = self.cached() {
            return Ok(found);
        }
        let _one_at_a_time = self.discovering.lock().await;
        if let Some(found) = self.cached() {
            return Ok(found);
        }
        let unavailable = |reason: String| OidcError::Discovery {
            issuer: self.settings.issuer.clone(),
            reason,
        };
        if let Some((at, reason)) = self
            .last_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            && at.elapsed() < REDISCOVER_AFTER
        {
            return Err(unavailable(reason));
        }
        let metadata =
            match ProviderMetadataWithLogout::discover_async(self.issuer.clone(), &self.http).await
            {
                Ok(metadata) => metadata,
                Err(e) => {
                    let reason = error_chain(&e);
                    *self.last_failure.lock().unwrap_or_else(|e| e.into_inner()) =
                        Some((Instant::now(), reason.clone()));
                    return Err(unavailable(reason));
                }
            };
        let end_session = metadata.additional_metadata().end_session_endpoint.clone();
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(self.settings.client_id.clone()),
            self.settings.client_secret.clone().map(ClientSecret::new),
        )
        .set_redirect_uri(self.redirect.clone());
        let found = Arc::new(Discovered {
            client,
            end_session,
        });
        *self.discovered.lock().unwrap_or_else(|e| e.into_inner()) = Some(found.clone());
        tracing::info!(
            issuer = self.settings.issuer,
            "identity provider discovered"
        );
        Ok(found)
    }

    fn cached(&self) -> Option<Arc<Discovered>> {
        self.discovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forgets the discovered keys, so the next use fetches them again (the provider
    /// may have rotated its signing keys).
    fn forget(&self) {
        *self.discovered.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Fetches the discovery document now (at start-up), logging what went wrong.
    pub async fn warm_up(&self) {
        if let Err(error) = self.discovered().await {
            tracing::warn!(%error, "single sign-on is unavailable until the provider answers");
        }
    }

    /// The provider's sign-in URL with a fresh state, nonce and PKCE challenge.
    pub async fn begin(&self) -> Result<Begun, OidcError> {
        let found = self.discovered().await?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = found.client.authorize_url(
            CoreAuthenticationFlow::AuthorizationCode,
            CsrfToken::new_random,
            Nonce::new_random,
        );
        for scope in self.settings.scopes.iter().filter(|s| *s != "openid") {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        for (name, value) in &self.settings.auth_params {
            request = request.add_extra_param(name.clone(), value.clone());
        }
        let (url, state, nonce) = request.set_pkce_challenge(challenge).url();
        Ok(Begun {
            url: url.to_string(),
            state: state.secret().clone(),
            nonce: nonce.secret().clone(),
            verifier: verifier.secret().clone(),
        })
    }

    /// Exchanges the callback's code (with the PKCE verifier) and verifies the ID
    /// token against the nonce the sign-in began with.
    pub async fn finish(
        &self,
        code: String,
        verifier: String,
        nonce: String,
    ) -> Result<Tokens, OidcError> {
        let found = self.discovered().await?;
        let response = found
            .client
            .exchange_code(AuthorizationCode::new(code))
            .map_err(|e| OidcError::Exchange(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| OidcError::Exchange(error_chain(&e)))?;
        let id_token = response.id_token().ok_or(OidcError::NoIdToken)?;
        let claims = self.verify(&found, id_token, Some(&Nonce::new(nonce)))?;
        Ok(tokens(
            id_token,
            &claims,
            response.refresh_token().map(|r| r.secret().clone()),
        ))
    }

    /// A new ID token for `refresh`, verified (refreshed tokens carry no nonce).
    pub async fn refresh(&self, refresh: &str) -> Result<Tokens, OidcError> {
        let found = self.discovered().await?;
        let refresh_token = RefreshToken::new(refresh.to_string());
        let response = found
            .client
            .exchange_refresh_token(&refresh_token)
            .map_err(|e| OidcError::Refresh(e.to_string()))?
            .request_async(&self.http)
            .await
            .map_err(|e| OidcError::Refresh(error_chain(&e)))?;
        let id_token = response.id_token().ok_or(OidcError::NoIdToken)?;
        let claims = self.verify(&found, id_token, None)?;
        // A provider that does not rotate refresh tokens sends none back: keep ours.
        let next = response
            .refresh_token()
            .map(|r| r.secret().clone())
            .unwrap_or_else(|| refresh.to_string());
        Ok(tokens(id_token, &claims, Some(next)))
    }

    /// The token's claims once its signature, issuer, audience, expiry and (at
    /// sign-in) nonce check out.
    fn verify(
        &self,
        found: &Discovered,
        id_token: &CoreIdToken,
        nonce: Option<&Nonce>,
    ) -> Result<CoreIdTokenClaims, OidcError> {
        let verifier = found.client.id_token_verifier();
        let claims = match nonce {
            Some(nonce) => id_token.claims(&verifier, nonce),
            None => id_token.claims(&verifier, |_: Option<&Nonce>| Ok(())),
        };
        claims.cloned().map_err(|e| {
            if matches!(
                e,
                openidconnect::ClaimsVerificationError::SignatureVerification(_)
            ) {
                self.forget();
            }
            OidcError::Verify(e.to_string())
        })
    }

    /// Where to send the browser to end the provider's own session too, when its
    /// discovery document names an end-session endpoint.
    pub async fn sign_out_url(&self, id_token: &str) -> Option<String> {
        let found = self.discovered().await.ok()?;
        let endpoint = found.end_session.clone()?;
        let mut request = LogoutRequest::from(endpoint)
            .set_client_id(ClientId::new(self.settings.client_id.clone()));
        // The ID token goes along as `id_token_hint` only when a post-logout address
        // needs it (providers require the hint for one): in a URL it would stay in the
        // browser's history while still valid. Without it the provider asks the
        // person to confirm.
        if let Some(after) = &self.post_logout
            && let Ok(token) = id_token.parse::<CoreIdToken>()
        {
            request = request
                .set_id_token_hint(&token)
                .set_post_logout_redirect_uri(after.clone());
        }
        Some(request.http_get_url().to_string())
    }
}

fn tokens(id_token: &CoreIdToken, claims: &CoreIdTokenClaims, refresh: Option<String>) -> Tokens {
    let expires = u64::try_from(claims.expiration().timestamp()).unwrap_or(0);
    let issued = u64::try_from(claims.issue_time().timestamp()).unwrap_or_else(|_| now_secs());
    let ahead = REFRESH_AHEAD.min(expires.saturating_sub(issued) / 2);
    Tokens {
        id_token: id_token.to_string(),
        provider: ProviderTokens {
            expires,
            refresh_at: expires.saturating_sub(ahead),
            refresh,
        },
    }
}

/// An error with its causes, for a sentence an operator can act on.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(issuer: &str) -> OidcSettings {
        OidcSettings {
            issuer: issuer.into(),
            client_id: "portico".into(),
            client_secret: None,
            redirect_url: "https://portico.example.com/auth/callback".into(),
            scopes: vec!["openid".into()],
            auth_params: vec![],
            ca_pem: None,
            post_logout_redirect_url: None,
        }
    }

    #[test]
    fn extra_authorization_parameters_cannot_replace_portico_own() {
        let items = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_auth_params(&items(&["access_type=offline", " prompt=consent ", ""])).ok(),
            Some(vec![
                ("access_type".into(), "offline".into()),
                ("prompt".into(), "consent".into())
            ])
        );
        for bad in [
            "redirect_uri=https://evil.example/",
            "state=x",
            "code_challenge_method=plain",
            "prompt",
        ] {
            assert!(parse_auth_params(&items(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn settings_that_are_not_urls_are_refused_with_the_flag_named() {
        let error = OidcProvider::new(settings("not a url"))
            .err()
            .map(|e| e.to_string());
        assert!(error.is_some_and(|e| e.starts_with("--oidc-issuer is not a valid URL")));
    }

    #[tokio::test]
    async fn a_provider_nobody_answers_for_is_named_in_the_error() {
        // A loopback port just handed out and closed, not a fixed one something may use.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let issuer = format!("https://127.0.0.1:{port}/dex");
        let provider = OidcProvider::new(settings(&issuer)).expect("settings");
        let first = provider
            .begin()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            first.contains(&format!(
                "the identity provider at {issuer} cannot be reached"
            )),
            "{first}"
        );
        // Asked again at once: not another attempt, the same reason.
        let again = provider
            .begin()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(again, first);
    }
}
