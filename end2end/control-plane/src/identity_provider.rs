//! The local cluster's identity provider: Dex, an OpenID Connect issuer with static
//! people and groups, served over TLS from the cluster's CA on a loopback port. The
//! API server trusts it through a structured authentication configuration whose
//! claim mappings prefix every name and group with `oidc:`, so no provider name can
//! collide with a `system:` one.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::certs::CertificateAuthority;
use crate::readiness::{Waited, answers_ok, wait_until};
use crate::{ControlPlaneError, Processes, io_err, spawn_logged};

/// Every person's password (Dex's own development hash of `password`).
pub const PASSWORD: &str = "password";
const PASSWORD_BCRYPT: &str = "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W";
/// The client Portico signs in as: public (PKCE, no secret), and so allowed any
/// loopback redirect, which lets the tests start Portico on any port.
pub const CLIENT_ID: &str = "portico";
/// A client the provider knows and the API server does not trust (not among its
/// audiences): what a misconfigured Portico looks like.
pub const UNTRUSTED_CLIENT_ID: &str = "not-trusted-by-kubernetes";
/// What the API server prefixes the provider's user and group names with.
pub const PREFIX: &str = "oidc:";

/// A person the provider knows.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Person {
    pub email: &'static str,
    pub groups: &'static [&'static str],
}

/// Ada may edit in the tests' team namespace, Bob only read, Eve nothing.
pub const PEOPLE: [Person; 3] = [
    Person {
        email: "ada@example.com",
        groups: &["dev"],
    },
    Person {
        email: "bob@example.com",
        groups: &["viewers"],
    },
    Person {
        email: "eve@example.com",
        groups: &[],
    },
];

/// How long the provider's ID tokens live: short, so tests see them refreshed.
pub const ID_TOKEN_LIFETIME: &str = "60s";

/// The running provider, as Portico and the tests need to know it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityProvider {
    /// `https://127.0.0.1:PORT/dex`
    pub issuer: String,
    /// The CA that signed the issuer's certificate (the cluster's).
    pub ca_file: PathBuf,
    pub client_id: &'static str,
    pub untrusted_client_id: &'static str,
    pub password: &'static str,
    pub prefix: &'static str,
    pub id_token_lifetime: &'static str,
    pub people: Vec<Person>,
}

impl IdentityProvider {
    /// Starts Dex in `root` and waits until it serves its discovery document.
    pub(crate) fn start(
        dex: &Path,
        etcd_url: &str,
        root: &Path,
        ca: &CertificateAuthority,
        ca_file: &Path,
        processes: &mut Processes,
    ) -> Result<Self, ControlPlaneError> {
        let [port] = crate::free_ports()?;
        let issuer = format!("https://127.0.0.1:{port}/dex");
        let serving = ca.serving_cert(&[])?;
        let cert = root.join("dex.crt");
        let key = root.join("dex.key");
        std::fs::write(&cert, &serving.cert_pem).map_err(io_err("writing dex.crt"))?;
        std::fs::write(&key, &serving.key_pem).map_err(io_err("writing dex.key"))?;
        let people: Vec<_> = PEOPLE
            .iter()
            .map(|p| {
                let name = p.email.split('@').next().unwrap_or(p.email);
                json!({
                    "email": p.email,
                    "hash": PASSWORD_BCRYPT,
                    "username": name,
                    "userID": format!("{name}-0001"),
                    "emailVerified": true,
                    "groups": p.groups,
                })
            })
            .collect();
        // JSON is YAML: Dex reads this as its config file.
        let config = json!({
            "issuer": issuer,
            // The cluster's etcd, under a prefix of Dex's own. Not Dex's memory
            // storage: renewing a refresh token deadlocks it in this Dex (its
            // UpdateRefreshToken reads offline sessions inside its own lock).
            "storage": {
                "type": "etcd",
                "config": { "endpoints": [etcd_url], "namespace": "dex/" },
            },
            "web": {
                "https": format!("127.0.0.1:{port}"),
                "tlsCert": cert,
                "tlsKey": key,
            },
            "logger": { "level": "info" },
            "oauth2": { "skipApprovalScreen": true, "passwordConnector": "local" },
            "expiry": {
                "idTokens": ID_TOKEN_LIFETIME,
                "refreshTokens": { "reuseInterval": "10s" },
            },
            "enablePasswordDB": true,
            // Dex's own sessions (a feature flag in this build, set below): people
            // stay signed in at Dex between sign-ins, and Dex offers RP-initiated
            // logout (`end_session_endpoint`), which Portico's sign-out follows.
            "sessions": {},
            "staticPasswords": people,
            "staticClients": [
                { "id": CLIENT_ID, "name": "Portico", "public": true },
                { "id": UNTRUSTED_CLIENT_ID, "name": "Not trusted by Kubernetes", "public": true },
            ],
        });
        let config_file = root.join("dex.yaml");
        std::fs::write(&config_file, config.to_string()).map_err(io_err("writing dex.yaml"))?;
        let log = root.join("dex.log");
        let mut cmd = Command::new(dex);
        cmd.arg("serve")
            .arg(&config_file)
            .env("DEX_SESSIONS_ENABLED", "true");
        processes.0.push(("dex", spawn_logged(cmd, &log)?));
        wait_until(
            Waited {
                component: "dex",
                child: processes.get("dex")?,
                log: &log,
            },
            Some(&ca.cert_pem()),
            None,
            answers_ok(format!("{issuer}/.well-known/openid-configuration")),
        )?;
        Ok(Self {
            issuer,
            ca_file: ca_file.to_path_buf(),
            client_id: CLIENT_ID,
            untrusted_client_id: UNTRUSTED_CLIENT_ID,
            password: PASSWORD,
            prefix: PREFIX,
            id_token_lifetime: ID_TOKEN_LIFETIME,
            people: PEOPLE.to_vec(),
        })
    }

    /// The API server's structured authentication configuration trusting this issuer
    /// for tokens issued to Portico: people by verified email, groups from the
    /// `groups` claim, both prefixed. In the version the API server's minor reads:
    /// `v1` from 1.34, `v1beta1` (the same fields) before.
    pub(crate) fn authentication_config(&self, ca_pem: &str, minor: u32) -> serde_json::Value {
        let api_version = if minor >= 34 {
            "apiserver.config.k8s.io/v1"
        } else {
            "apiserver.config.k8s.io/v1beta1"
        };
        json!({
            "apiVersion": api_version,
            "kind": "AuthenticationConfiguration",
            "jwt": [{
                "issuer": {
                    "url": self.issuer,
                    "audiences": [self.client_id],
                    "certificateAuthority": ca_pem,
                },
                "claimValidationRules": [{
                    "expression": "claims.?email_verified.orValue(false) == true",
                    "message": "the provider has not verified this person's email",
                }],
                "claimMappings": {
                    "username": { "claim": "email", "prefix": self.prefix },
                    "groups": { "claim": "groups", "prefix": self.prefix },
                },
            }],
        })
    }
}
