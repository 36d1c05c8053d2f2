//! Server functions: thin wrappers that find the backend and delegate to it.

use leptos::prelude::*;

use crate::error::BackendError;
use portico_core::payload::{
    CrdSummary, DataVolume, FormSpec, ObjectDetail, Permissions, StackChangePreview, StackData,
    StackOffer, SubmitOutcome,
};
use portico_core::resource::{ResourceKind, ResourceRef};

#[cfg(feature = "ssr")]
fn backend() -> Result<crate::backend::SharedBackend, BackendError> {
    use_context::<crate::backend::SharedBackend>()
        .ok_or_else(|| BackendError::Internal("no backend".into()))
}

/// The JSON text a form sends, as a value.
#[cfg(feature = "ssr")]
fn parse_object(text: &str) -> Result<serde_json::Value, BackendError> {
    serde_json::from_str(text)
        .map_err(|e| BackendError::Invalid(format!("The object is not valid JSON: {e}")))
}

/// Lists the cluster's CustomResourceDefinitions.
#[server(prefix = "/api", endpoint = "crds")]
pub async fn list_crds() -> Result<Vec<CrdSummary>, BackendError> {
    backend()?.list_crds().await
}

/// Lists the kinds the navigation offers.
#[server(prefix = "/api", endpoint = "resources")]
pub async fn list_resources() -> Result<Vec<ResourceKind>, BackendError> {
    backend()?.list_resources().await
}

/// Lists the cluster's namespaces.
#[server(prefix = "/api", endpoint = "namespaces")]
pub async fn list_namespaces() -> Result<Vec<String>, BackendError> {
    backend()?.list_namespaces().await
}

/// One object's detail.
#[server(prefix = "/api", endpoint = "object")]
pub async fn fetch_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
) -> Result<ObjectDetail, BackendError> {
    backend()?.object_detail(resource, namespace, name).await
}

/// The schema a create form is generated from.
#[server(prefix = "/api", endpoint = "form")]
pub async fn fetch_form_spec(resource: ResourceRef) -> Result<FormSpec, BackendError> {
    backend()?.form_spec(resource).await
}

/// Creates an object given as JSON text, or only dry-runs it (`dryRun=All`).
#[server(prefix = "/api", endpoint = "submit")]
pub async fn submit_object(object: String, dry_run: bool) -> Result<SubmitOutcome, BackendError> {
    let value = parse_object(&object)?;
    backend()?.submit(value, dry_run).await
}

/// An object as JSON, for the edit form.
#[server(prefix = "/api", endpoint = "object-json")]
pub async fn fetch_object_json(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
) -> Result<serde_json::Value, BackendError> {
    backend()?.object_for_edit(resource, namespace, name).await
}

/// Replaces an object given as JSON text (or only dry-runs it).
#[server(prefix = "/api", endpoint = "replace")]
pub async fn replace_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
    object: String,
    dry_run: bool,
) -> Result<SubmitOutcome, BackendError> {
    let value = parse_object(&object)?;
    backend()?
        .replace(resource, namespace, name, value, dry_run)
        .await
}

/// Deletes an object with a propagation policy; returns the finalizers holding it.
#[server(prefix = "/api", endpoint = "delete")]
pub async fn delete_object(
    resource: ResourceRef,
    namespace: Option<String>,
    name: String,
    propagation: String,
) -> Result<Vec<String>, BackendError> {
    backend()?
        .delete(resource, namespace, name, propagation)
        .await
}

/// The stack catalog, for the Provision page.
#[server(prefix = "/api", endpoint = "stack-offers")]
pub async fn stack_offers() -> Result<Vec<StackOffer>, BackendError> {
    Ok(backend()?.stack_offers())
}

/// Who is signed in, for the top bar's sign-out.
#[server(prefix = "/api", endpoint = "signed-in-as")]
pub async fn signed_in_as() -> Result<Option<String>, BackendError> {
    Ok(backend()?.signed_in_as())
}

/// A Stack's generated password, for a user allowed to read its Secret. A POST, so
/// the password never travels in a URL and the CSRF guard applies.
#[server(prefix = "/api", endpoint = "stack-password")]
pub async fn reveal_stack_password(
    namespace: String,
    name: String,
) -> Result<String, BackendError> {
    backend()?.stack_password(namespace, name).await
}

/// What deleting a Stack keeps and removes (its delete dialog).
#[server(prefix = "/api", endpoint = "stack-data")]
pub async fn fetch_stack_data(namespace: String, name: String) -> Result<StackData, BackendError> {
    backend()?.stack_data(namespace, name).await
}

/// What a change of a Stack's version or plan would do (its page's upgrade panel).
#[server(prefix = "/api", endpoint = "stack-change-preview")]
pub async fn preview_stack_change(
    namespace: String,
    name: String,
    version: Option<String>,
    plan: Option<String>,
) -> Result<StackChangePreview, BackendError> {
    backend()?
        .preview_stack_change(namespace, name, version, plan)
        .await
}

/// Changes a Stack's version or plan, as the signed-in person.
#[server(prefix = "/api", endpoint = "stack-change")]
pub async fn change_stack(
    namespace: String,
    name: String,
    version: Option<String>,
    plan: Option<String>,
) -> Result<(), BackendError> {
    backend()?
        .change_stack(namespace, name, version, plan)
        .await
}

/// Volumes kept after their Stack was deleted (the Provision page).
#[server(prefix = "/api", endpoint = "kept-volumes")]
pub async fn fetch_kept_volumes() -> Result<Vec<DataVolume>, BackendError> {
    backend()?.kept_volumes().await
}

/// What the viewer may do with a kind in a namespace.
#[server(prefix = "/api", endpoint = "permissions")]
pub async fn fetch_permissions(
    resource: ResourceRef,
    namespace: Option<String>,
) -> Result<Permissions, BackendError> {
    backend()?.permissions(resource, namespace).await
}
