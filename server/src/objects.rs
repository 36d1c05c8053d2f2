//! Writing arbitrary objects to the API server, and turning its refusals into
//! [`ApiRejection`]s whose causes name the fields exactly as the server did.

use app::model::{ApiRejection, FieldCause};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiResource, Scope};

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("the object has no apiVersion and kind")]
    MissingType,
    #[error("the API server does not serve {0}")]
    UnknownKind(String),
    #[error("the API server refused the request: {}", .0.message)]
    Rejected(ApiRejection),
    #[error("talking to the API server: {0}")]
    Transport(kube::Error),
}

impl From<kube::Error> for ObjectError {
    fn from(err: kube::Error) -> Self {
        match rejection(&err) {
            Some(r) => Self::Rejected(r),
            None => Self::Transport(err),
        }
    }
}

/// The API server's `Status` inside a kube error, if the server answered at all.
pub fn rejection(err: &kube::Error) -> Option<ApiRejection> {
    let kube::Error::Api(status) = err else {
        return None;
    };
    let causes = status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| FieldCause {
                    field: c.field.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    Some(ApiRejection {
        code: status.code,
        reason: status.reason.clone(),
        message: status.message.clone(),
        causes,
    })
}

fn gvk_of(obj: &DynamicObject) -> Result<GroupVersionKind, ObjectError> {
    let types = obj.types.as_ref().ok_or(ObjectError::MissingType)?;
    let (group, version) = types
        .api_version
        .split_once('/')
        .unwrap_or(("", types.api_version.as_str()));
    Ok(GroupVersionKind::gvk(group, version, &types.kind))
}

/// Creates `obj` (in `default` when namespaced and no namespace is given). With
/// `dry_run`, the API server validates and admits it without storing anything.
pub async fn create(
    client: &kube::Client,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<DynamicObject, ObjectError> {
    let gvk = gvk_of(obj)?;
    let (resource, caps) = match discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        Err(kube::Error::Api(s)) if s.code == 404 => {
            return Err(ObjectError::UnknownKind(format!(
                "{}/{} {}",
                gvk.group, gvk.version, gvk.kind
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            obj.metadata.namespace.as_deref().unwrap_or("default"),
            &resource,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let params = PostParams {
        dry_run,
        field_manager: Some("portico".into()),
    };
    Ok(api.create(&params, obj).await?)
}

/// Replaces an object (optimistic concurrency: the server refuses with 409 Conflict
/// when `obj.metadata.resourceVersion` is not the latest). With `dry_run`, nothing is
/// stored.
pub async fn replace(
    client: &kube::Client,
    resource: &app::table::model::ResourceRef,
    namespace: Option<&str>,
    name: &str,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<DynamicObject, ObjectError> {
    let api = api_for(client, &api_resource(resource), namespace);
    let params = PostParams {
        dry_run,
        field_manager: Some("portico".into()),
    };
    Ok(api.replace(name, &params, obj).await?)
}

/// Reads an object for editing, without managedFields.
pub async fn get(
    client: &kube::Client,
    resource: &app::table::model::ResourceRef,
    namespace: Option<&str>,
    name: &str,
) -> Result<DynamicObject, ObjectError> {
    let api = api_for(client, &api_resource(resource), namespace);
    let mut obj = api.get(name).await?;
    obj.metadata.managed_fields = None;
    Ok(obj)
}

/// Deletes an object with a propagation policy (`Foreground`, `Background` or
/// `Orphan`). Returns the finalizers still holding it, if it was not removed at once.
pub async fn delete(
    client: &kube::Client,
    resource: &app::table::model::ResourceRef,
    namespace: Option<&str>,
    name: &str,
    propagation: &str,
) -> Result<Vec<String>, ObjectError> {
    use kube::api::{DeleteParams, PropagationPolicy};
    let api = api_for(client, &api_resource(resource), namespace);
    let policy = match propagation {
        "Foreground" => PropagationPolicy::Foreground,
        "Orphan" => PropagationPolicy::Orphan,
        _ => PropagationPolicy::Background,
    };
    let params = DeleteParams {
        propagation_policy: Some(policy),
        ..DeleteParams::default()
    };
    let outcome = api.delete(name, &params).await?;
    Ok(outcome
        .left()
        .and_then(|obj| obj.metadata.finalizers)
        .unwrap_or_default())
}

pub(crate) fn api_resource(r: &app::table::model::ResourceRef) -> ApiResource {
    ApiResource {
        group: r.group.clone(),
        version: r.version.clone(),
        api_version: r.api_version(),
        kind: String::new(),
        plural: r.plural.clone(),
    }
}

pub(crate) fn api_for(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}
