//! The seam between the UI's server functions and the server's Kubernetes code.
//! Server functions check who is asking and delegate here; the server binary
//! implements the trait and provides an [`SharedBackend`] as Leptos context.

use std::sync::Arc;

use crate::model::CrdSummary;
use crate::table::model::ResourceKind;

/// Why the backend could not answer, worded for the person reading the page.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BackendError {
    #[error(
        "Portico has not finished loading the cluster's resource types yet; try again in a moment."
    )]
    NotReady,
    #[error("The Kubernetes API server could not be reached: {0}")]
    Unreachable(String),
}

#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Every CustomResourceDefinition in the cluster, sorted by group then kind.
    async fn list_crds(&self) -> Result<Vec<CrdSummary>, BackendError>;

    /// Every kind the navigation offers: the CRDs, then the built-in kinds Portico lists.
    async fn list_resources(&self) -> Result<Vec<ResourceKind>, BackendError>;

    /// Names of the cluster's namespaces, sorted.
    async fn list_namespaces(&self) -> Result<Vec<String>, BackendError>;
}

pub type SharedBackend = Arc<dyn Backend>;
