//! Server functions: thin wrappers that find the backend and delegate to it.

use leptos::prelude::*;

use crate::model::{CrdSummary, FormSpec, ObjectDetail, Permissions, StackOffer, SubmitOutcome};
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

/// The schema a create form is generated from.
#[server(prefix = "/api", endpoint = "form")]
pub async fn fetch_form_spec(resource: ResourceRef) -> Result<FormSpec, ServerFnError> {
    backend()?
        .form_spec(resource)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// Creates an object given as JSON text, or only dry-runs it (`dryRun=All`).
#[server(prefix = "/api", endpoint = "submit")]
pub async fn submit_object(object: String, dry_run: bool) -> Result<SubmitOutcome, ServerFnError> {
    let value: serde_json::Value = serde_json::from_str(&object)
        .map_err(|e| ServerFnError::new(format!("The object is not valid JSON: {e}")))?;
    backend()?
        .submit(value, dry_run)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// An object as JSON, for the edit form.
#[server(prefix = "/api", endpoint = "object-json")]
pub async fn fetch_object_json(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
) -> Result<serde_json::Value, ServerFnError> {
    backend()?
        .object_for_edit(resource, namespace, name)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// Replaces an object given as JSON text (or only dry-runs it).
#[server(prefix = "/api", endpoint = "replace")]
pub async fn replace_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
    object: String,
    dry_run: bool,
) -> Result<SubmitOutcome, ServerFnError> {
    let value: serde_json::Value = serde_json::from_str(&object)
        .map_err(|e| ServerFnError::new(format!("The object is not valid JSON: {e}")))?;
    backend()?
        .replace(resource, namespace, name, value, dry_run)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// Deletes an object with a propagation policy; returns the finalizers holding it.
#[server(prefix = "/api", endpoint = "delete")]
pub async fn delete_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
    propagation: String,
) -> Result<Vec<String>, ServerFnError> {
    backend()?
        .delete(resource, namespace, name, propagation)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// The stack catalog, for the Provision page.
#[server(prefix = "/api", endpoint = "stack-offers")]
pub async fn stack_offers() -> Result<Vec<StackOffer>, ServerFnError> {
    Ok(backend()?.stack_offers())
}

/// A Stack's generated password, for a user allowed to read its Secret. A POST, so
/// the password never travels in a URL and the CSRF guard applies.
#[server(prefix = "/api", endpoint = "stack-password")]
pub async fn reveal_stack_password(
    namespace: String,
    name: String,
) -> Result<String, ServerFnError> {
    backend()?
        .stack_password(namespace, name)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}

/// What the viewer may do with a kind in a namespace.
#[server(prefix = "/api", endpoint = "permissions")]
pub async fn fetch_permissions(
    resource: ResourceRef,
    namespace: Option<String>,
) -> Result<Permissions, ServerFnError> {
    backend()?
        .permissions(resource, namespace)
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))
}
