//! The seam between the UI's server functions and the server's Kubernetes code.
//! Server functions check who is asking and delegate here; the server binary
//! implements the trait and provides an [`SharedBackend`] as Leptos context.

use std::sync::Arc;

pub use crate::error::BackendError;
use portico_core::payload::{
    CrdSummary, DataVolume, FormSpec, ObjectDetail, Permissions, StackChangePreview, StackData,
    StackOffer, SubmitOutcome,
};
use portico_core::resource::{ResourceKind, ResourceRef};

#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Every CustomResourceDefinition in the cluster, sorted by group then kind.
    async fn list_crds(&self) -> Result<Vec<CrdSummary>, BackendError>;

    /// Every kind the navigation offers: the CRDs, then the built-in kinds Portico lists.
    async fn list_resources(&self) -> Result<Vec<ResourceKind>, BackendError>;

    /// Names of the cluster's namespaces, sorted.
    async fn list_namespaces(&self) -> Result<Vec<String>, BackendError>;

    /// The schema and names a create form is generated from.
    async fn form_spec(&self, resource: ResourceRef) -> Result<FormSpec, BackendError>;

    /// Creates `object` (or only dry-runs it) and reports the server's verdict.
    async fn submit(
        &self,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError>;

    /// An object as JSON, for editing (without managedFields).
    async fn object_for_edit(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
    ) -> Result<serde_json::Value, BackendError>;

    /// Replaces an object (409 Conflict when it changed since it was read), or only
    /// dry-runs the replacement.
    async fn replace(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
        object: serde_json::Value,
        dry_run: bool,
    ) -> Result<SubmitOutcome, BackendError>;

    /// Deletes an object; returns the finalizers still holding it.
    async fn delete(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
        propagation: String,
    ) -> Result<Vec<String>, BackendError>;

    /// One object, its conditions, finalizers and owner chain.
    async fn object_detail(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
        name: String,
    ) -> Result<ObjectDetail, BackendError>;

    /// What the caller may do with `resource` in `namespace`, as the API server's
    /// authorizer says.
    async fn permissions(
        &self,
        resource: ResourceRef,
        namespace: Option<String>,
    ) -> Result<Permissions, BackendError>;

    /// What the Provision page offers.
    fn stack_offers(&self) -> Vec<StackOffer>;

    /// The signed-in person's Kubernetes name, when they signed in (token or single
    /// sign-on); `None` where there is no sign-in to end.
    fn signed_in_as(&self) -> Option<String>;

    /// What deleting Stack `name` keeps and removes: its policy, volumes and Secret.
    async fn stack_data(&self, namespace: String, name: String) -> Result<StackData, BackendError>;

    /// What changing Stack `name` to `version` and `plan` (`None`: as it is) would do,
    /// checked with a dry run as the caller; with both `None`, what it may change to.
    async fn preview_stack_change(
        &self,
        namespace: String,
        name: String,
        version: Option<String>,
        plan: Option<String>,
    ) -> Result<StackChangePreview, BackendError>;

    /// Changes Stack `name`'s version and plan as the caller; a downgrade the catalog
    /// forbids is refused with its sentence before anything is written.
    async fn change_stack(
        &self,
        namespace: String,
        name: String,
        version: Option<String>,
        plan: Option<String>,
    ) -> Result<(), BackendError>;

    /// Volume claims kept after their Stack was deleted (deletionPolicy Retain), in
    /// every namespace the person may list claims and Stacks in.
    async fn kept_volumes(&self) -> Result<Vec<DataVolume>, BackendError>;

    /// The generated password of a Stack, read from its credentials Secret with the
    /// asking user's rights (Forbidden for anyone who may not read that Secret).
    async fn stack_password(&self, namespace: String, name: String)
    -> Result<String, BackendError>;
}

pub type SharedBackend = Arc<dyn Backend>;
