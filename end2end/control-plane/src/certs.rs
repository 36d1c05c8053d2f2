//! A throw-away certificate authority: the API server's serving certificate and
//! client certificates for the admin and for test users (CN = user, O = groups).

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, DnValue, ExtendedKeyUsagePurpose,
    IsCa, KeyPair, KeyUsagePurpose,
};

/// Errors from generating keys and certificates.
#[derive(Debug, thiserror::Error)]
#[error("generating certificates: {0}")]
pub struct CertError(#[from] rcgen::Error);

/// A PEM certificate with its PEM private key.
#[derive(Clone)]
pub struct CertPair {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The control plane's CA. The API server trusts it for client certificates, and
/// kubeconfigs trust it for the serving certificate.
pub struct CertificateAuthority {
    cert: Certificate,
    key: KeyPair,
}

impl CertificateAuthority {
    pub fn new() -> Result<Self, CertError> {
        Self::named("portico-local-ca")
    }

    /// A CA of its own name: the front proxy's is not the one that signs client
    /// certificates, so no ordinary client may assert the X-Remote-* headers.
    pub fn named(common_name: &str) -> Result<Self, CertError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(Self { cert, key })
    }

    pub fn cert_pem(&self) -> String {
        self.cert.pem()
    }

    /// The CA's private key: the controller-manager signs approved CSRs with it.
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// A serving certificate valid for the loopback names the API server listens on,
    /// and for `extra` names and addresses (the real node's side of the forwarder, or
    /// kubelet's own address).
    pub fn serving_cert(&self, extra: &[String]) -> Result<CertPair, CertError> {
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            "kubernetes.default.svc.cluster.local".to_string(),
            // The `kubernetes` Service's ClusterIP (the first of the service range),
            // which in-cluster clients dial.
            crate::API_SERVICE_IP.to_string(),
        ];
        names.extend_from_slice(extra);
        let mut params = CertificateParams::new(names)?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate for `user`, the way the API server's x509 authenticator
    /// reads it: common name = user, organisation = group. rcgen keeps one value per
    /// attribute type, so a certificate carries at most one group; bind roles to it.
    pub fn client_cert(&self, user: &str, group: Option<&str>) -> Result<CertPair, CertError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        if let Some(group) = group {
            params
                .distinguished_name
                .push(DnType::OrganizationName, DnValue::Utf8String(group.into()));
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Result<CertPair, CertError> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        Ok(CertPair {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A key pair for service-account tokens: (private key PEM to sign with, public key
/// PEM to verify with). kube-apiserver reads the public half only as a public key.
pub fn service_account_keys() -> Result<(String, String), CertError> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}
