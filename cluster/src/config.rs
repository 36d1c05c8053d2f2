//! Building the portal's own kube client from kube's standard configuration sources.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("reading kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("no usable Kubernetes configuration (kubeconfig or in-cluster): {0}")]
    Infer(#[from] kube::config::InferConfigError),
    #[error("building the Kubernetes client: {0}")]
    Build(#[from] kube::Error),
}

/// A client from an explicit kubeconfig (and optional context), or from kube's
/// inference: $KUBECONFIG, ~/.kube/config, then the in-cluster service account.
pub async fn build(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, ClientError> {
    Ok(kube::Client::try_from(config(kubeconfig, context).await?)?)
}

/// The portal's configuration, from an explicit kubeconfig (and optional context) or
/// kube's inference.
pub async fn config(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Config, ClientError> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig_err = |source| ClientError::Kubeconfig {
                path: path.display().to_string(),
                source,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(kubeconfig_err)?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(kubeconfig_err)?
        }
        None if context.is_some() => {
            kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|source| ClientError::Kubeconfig {
                    path: "(default)".into(),
                    source,
                })?
        }
        None => kube::Config::infer().await?,
    };
    Ok(config)
}
