//! Kubeconfig files for the local control plane's users.

use std::path::Path;

use crate::ControlPlaneError;
use crate::certs::CertPair;

fn b64(data: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// Writes a kubeconfig whose only context is `user` at `server`, authenticated by `pair`.
pub fn write(
    path: &Path,
    server: &str,
    ca_pem: &str,
    user: &str,
    pair: &CertPair,
) -> std::io::Result<()> {
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "portico-local", "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca_pem),
        }}],
        "users": [{"name": user, "user": {
            "client-certificate-data": b64(&pair.cert_pem),
            "client-key-data": b64(&pair.key_pem),
        }}],
        "contexts": [{"name": "portico-local", "context": {"cluster": "portico-local", "user": user, "namespace": "default"}}],
        "current-context": "portico-local",
    });
    // JSON is YAML too, and browser tests can read it without a YAML parser.
    let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    std::fs::write(path, text)?;
    // Holds a private key: owner-only.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

/// A kube client for the kubeconfig at `path`.
pub async fn client_from(path: &Path) -> Result<kube::Client, ControlPlaneError> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| ControlPlaneError::Client(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .map_err(|e| ControlPlaneError::Client(e.to_string()))?;
    kube::Client::try_from(config).map_err(|e| ControlPlaneError::Client(e.to_string()))
}
