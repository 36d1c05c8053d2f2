//! The UI's endpoints, each declared once. [`endpoints!`] makes of every entry a
//! server function (what a page calls; on the server it asks the [`Backend`] the
//! server put in context) and the `Backend` method of the same name, signature and
//! documentation, which the server implements (`server/src/web/backend`). Adding an
//! endpoint touches two places: an entry here and its method there.
//!
//! [`Backend`]: crate::backend::Backend

use leptos::prelude::*;
use leptos::server_fn::codec::Json;

use crate::codec::JsonText;
use crate::error::BackendError;
use portico_core::access::NamespaceAccess;
use portico_core::find::FoundObjects;
use portico_core::payload::{
    BindingOffer, CrdSummary, DataVolume, FormSpec, ObjectDetail, Permissions, StackChangePreview,
    StackData, StackOffer, StackPlace, SubmitOutcome,
};
use portico_core::resource::{ObjectKey, ResourceKind, ResourceRef};
use portico_core::usage::{Usage, UsageTarget};

#[cfg(feature = "ssr")]
fn backend() -> Result<crate::backend::SharedBackend, BackendError> {
    use_context::<crate::backend::SharedBackend>()
        .ok_or_else(|| BackendError::Internal("no backend".into()))
}

/// `"path" => fn name(args) -> Output;` declares `POST /api/path`, arguments form-
/// encoded; `"path" as Json => …` takes them as a JSON body (for whole objects).
macro_rules! endpoints {
    ($(
        $(#[doc = $doc:literal])*
        $path:literal $(as $input:ident)? => fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $out:ty;
    )*) => {
        /// What the UI asks of the cluster, implemented by the server with the caller's
        /// own client and provided as Leptos context ([`SharedBackend`]).
        ///
        /// [`SharedBackend`]: crate::backend::SharedBackend
        #[cfg(feature = "ssr")]
        #[async_trait::async_trait]
        pub trait Backend: Send + Sync + 'static {
            $(
                $(#[doc = $doc])*
                async fn $name(&self, $($arg: $ty),*) -> Result<$out, BackendError>;
            )*
        }

        $(
            $(#[doc = $doc])*
            #[server(prefix = "/api", endpoint = $path, output = JsonText $(, input = $input)?)]
            pub async fn $name($($arg: $ty),*) -> Result<$out, BackendError> {
                backend()?.$name($($arg),*).await
            }
        )*
    };
}

endpoints! {
    /// Every CustomResourceDefinition in the cluster, sorted by group then kind.
    "crds" => fn list_crds() -> Vec<CrdSummary>;

    /// Every kind the navigation offers: the CRDs, then the built-in kinds Portico lists.
    "resources" => fn list_resources() -> Vec<ResourceKind>;

    /// Names of the cluster's namespaces, sorted.
    "namespaces" => fn list_namespaces() -> Vec<String>;

    /// One object, its conditions, finalizers and owner chain.
    "object" => fn fetch_object(key: ObjectKey) -> ObjectDetail;

    /// The schema and names a create form is generated from.
    "form" => fn fetch_form_spec(resource: ResourceRef) -> FormSpec;

    /// Creates `object` (or only dry-runs it, `dryRun=All`) and reports the server's
    /// verdict.
    "submit" as Json => fn submit_object(object: serde_json::Value, dry_run: bool) -> SubmitOutcome;

    /// An object as JSON, for editing (without managedFields).
    "object-json" => fn fetch_object_json(key: ObjectKey) -> serde_json::Value;

    /// Replaces an object (409 Conflict when it changed since it was read), or only
    /// dry-runs the replacement.
    "replace" as Json => fn replace_object(key: ObjectKey, object: serde_json::Value, dry_run: bool) -> SubmitOutcome;

    /// Deletes an object with a propagation policy; returns the finalizers still
    /// holding it.
    "delete" => fn delete_object(key: ObjectKey, propagation: String) -> Vec<String>;

    /// What the Provision page offers: the stack catalog.
    "stack-offers" => fn stack_offers() -> Vec<StackOffer>;

    /// The signed-in person's Kubernetes name, for the top bar's sign-out, when they
    /// signed in (token or single sign-on); `None` where there is no sign-in to end.
    "signed-in-as" => fn signed_in_as() -> Option<String>;

    /// The generated password of a Stack, read from its credentials Secret with the
    /// asking user's rights (Forbidden for anyone who may not read that Secret). A
    /// POST, so the password never travels in a URL and the CSRF guard applies.
    "stack-password" => fn reveal_stack_password(namespace: String, name: String) -> String;

    /// What deleting Stack `name` keeps and removes (its delete dialog): its policy,
    /// volumes and Secret.
    "stack-data" => fn fetch_stack_data(namespace: String, name: String) -> StackData;

    /// What changing Stack `name` to `version` and `plan` (`None`: as it is) would do,
    /// checked with a dry run as the caller; with both `None`, what it may change to.
    "stack-change-preview" => fn preview_stack_change(namespace: String, name: String, version: Option<String>, plan: Option<String>) -> StackChangePreview;

    /// Changes Stack `name`'s version and plan as the caller; a downgrade the catalog
    /// forbids is refused with its sentence before anything is written.
    "stack-change" => fn change_stack(namespace: String, name: String, version: Option<String>, plan: Option<String>) -> ();

    /// The namespaces the Provision form offers, those the caller may create a Stack in
    /// first; empty when they may not list namespaces.
    "stack-places" => fn stack_places() -> Vec<StackPlace>;

    /// Volume claims kept after their Stack was deleted (deletionPolicy Retain), in
    /// every namespace the person may list claims and Stacks in.
    "kept-volumes" => fn fetch_kept_volumes() -> Vec<DataVolume>;

    /// Where Stack `stack` can be bound, for the binding picker: the namespace's
    /// Deployments, StatefulSets and other Stacks, each with whether the caller may
    /// bind it (the rights admission asks of them), and the variables it would get.
    "binding-offer" => fn fetch_binding_offer(namespace: String, stack: String) -> BindingOffer;

    /// Makes `binding` (a StackBinding) as the caller, its workload first accepting
    /// the binding's variables (the annotation `portico.dev/binding-prefixes`, without
    /// which the reconciler may put none there): the picker's Bind button.
    "bind" as Json => fn bind_workload(binding: serde_json::Value) -> SubmitOutcome;

    /// What `target` uses now (CPU and memory from metrics.k8s.io) beside its requests
    /// and limits, read as the caller; or why the cluster cannot say.
    "usage" as Json => fn fetch_usage(target: UsageTarget) -> Usage;

    /// What the caller may do with `resource` in `namespace`, as the API server's
    /// authorizer says.
    "permissions" => fn fetch_permissions(resource: ResourceRef, namespace: Option<String>) -> Permissions;

    /// The objects the caller may list whose names match `query` (words; `ns/` asks for
    /// a namespace too), best first. `namespace` is where to look when they may not
    /// list namespaces; `opened` marks the first question since the palette opened
    /// (names kept from a few seconds ago are read again: what was just made shows).
    "find" => fn find_objects(query: String, namespace: Option<String>, opened: Option<bool>) -> FoundObjects;

    /// What the caller may do in `namespace`: every kind by verb, as their
    /// SelfSubjectRulesReview there says.
    "access" => fn fetch_namespace_access(namespace: String) -> NamespaceAccess;
}
