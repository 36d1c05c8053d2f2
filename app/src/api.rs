//! Server functions: thin wrappers that find the backend and delegate to it.

use leptos::prelude::*;

use crate::model::{CrdSummary, ObjectDetail};
use crate::table::model::{ResourceKind, ResourceRef};

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

/// One object's detail.
#[server(prefix = "/api", endpoint = "object")]
pub async fn fetch_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
) -> Result<ObjectDetail, ServerFnError> {
    backend()?
        .object_detail(resource, namespace, name)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}
