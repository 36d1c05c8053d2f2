//! Certificates for proxy-mode tests, made on the spot with rcgen.

use portico_server::auth::proxy_tls::{ProxyTls, ProxyTlsFiles};

/// Certificates for a proxy-mode test: Portico's serving certificate, the proxy CA
/// and, signed by it, the real proxy's and an impostor's client certificates; and a
/// rogue CA's certificate carrying the proxy's name.
pub struct Pki {
    dir: tempfile::TempDir,
    server_ca: String,
    /// The real proxy's client certificate and key (PEM).
    pub proxy: String,
    /// Signed by the proxy CA, but for a name Portico does not allow.
    pub wrong_name: String,
    /// The proxy's name, signed by another CA.
    pub rogue: String,
}

/// A client certificate and its key, PEM, as reqwest wants an identity.
fn client_cert(name: &str, ca: &rcgen::Certificate, ca_key: &rcgen::KeyPair) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).expect("params");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, ca, ca_key).expect("sign");
    format!("{}{}", cert.pem(), key.serialize_pem())
}

fn ca(name: &str) -> (rcgen::Certificate, rcgen::KeyPair) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(vec![]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    (params.self_signed(&key).expect("self-signed"), key)
}

impl Pki {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let (server_ca, server_ca_key) = ca("portico serving CA");
        let server_key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(vec![]).expect("params");
        params.subject_alt_names = vec![rcgen::SanType::IpAddress(std::net::IpAddr::from([
            127, 0, 0, 1,
        ]))];
        let server = params
            .signed_by(&server_key, &server_ca, &server_ca_key)
            .expect("serving certificate");
        let (proxy_ca, proxy_ca_key) = ca("proxy CA");
        let (rogue_ca, rogue_ca_key) = ca("rogue CA");
        let write = |name: &str, text: &str| {
            std::fs::write(dir.path().join(name), text).expect("write pem");
        };
        write("serving.pem", &server.pem());
        write("serving-key.pem", &server_key.serialize_pem());
        write("proxy-ca.pem", &proxy_ca.pem());
        Pki {
            server_ca: server_ca.pem(),
            proxy: client_cert("portico-proxy", &proxy_ca, &proxy_ca_key),
            wrong_name: client_cert("someone-else", &proxy_ca, &proxy_ca_key),
            rogue: client_cert("portico-proxy", &rogue_ca, &rogue_ca_key),
            dir,
        }
    }

    pub fn tls(&self) -> ProxyTls {
        ProxyTls::load(&ProxyTlsFiles {
            cert: self.dir.path().join("serving.pem"),
            key: self.dir.path().join("serving-key.pem"),
            client_ca: self.dir.path().join("proxy-ca.pem"),
            allowed_names: vec!["portico-proxy".into()],
        })
        .expect("proxy TLS settings")
    }

    /// An HTTPS client trusting Portico's certificate, presenting `identity` if any.
    pub fn client(&self, identity: Option<&str>) -> reqwest::Client {
        let mut builder = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(
                reqwest::Certificate::from_pem(self.server_ca.as_bytes()).expect("CA"),
            );
        if let Some(pem) = identity {
            builder =
                builder.identity(reqwest::Identity::from_pem(pem.as_bytes()).expect("identity"));
        }
        builder.build().expect("client")
    }
}
