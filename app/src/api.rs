//! Server functions: thin wrappers that find the backend and delegate to it.

use leptos::prelude::*;

use crate::model::CrdSummary;
use crate::table::model::ResourceKind;

#[cfg(feature = "ssr")]
fn backend() -> Result<crate::backend::SharedBackend, ServerFnError> {
    use_context::<crate::backend::SharedBackend>()
        .ok_or_else(|| ServerFnError::new("Portico's server is misconfigured: no backend."))
}

/// Lists the cluster's CustomResourceDefinitions.
#[server(prefix = "/api", endpoint = "crds")]
pub async fn list_crds() -> Result<Vec<CrdSummary>, ServerFnError> {
    backend()?
        .list_crds()
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// Lists the kinds the navigation offers.
#[server(prefix = "/api", endpoint = "resources")]
pub async fn list_resources() -> Result<Vec<ResourceKind>, ServerFnError> {
    backend()?
        .list_resources()
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// Lists the cluster's namespaces.
#[server(prefix = "/api", endpoint = "namespaces")]
pub async fn list_namespaces() -> Result<Vec<String>, ServerFnError> {
    backend()?
        .list_namespaces()
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}
