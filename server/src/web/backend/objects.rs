//! Reading and writing arbitrary objects, their kinds resolved by the registry (no
//! discovery call per request); refusals keep the server's field causes.

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use portico_core::payload::ApiRejection;

use crate::cluster::error::{ApiError, split_api_version};
use crate::cluster::registry::KindRegistry;

#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("the object has no apiVersion and kind")]
    MissingType,
    #[error("the API server does not serve {0}")]
    UnknownKind(String),
    #[error("{0:?} is not a namespace name")]
    BadNamespace(String),
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl From<kube::Error> for ObjectError {
    fn from(err: kube::Error) -> Self {
        Self::Api(err.into())
    }
}

impl ObjectError {
    /// The API server's refusal, with its field causes, if it answered.
    pub fn rejection(&self) -> Option<&ApiRejection> {
        match self {
            Self::Api(e) => e.rejection(),
            _ => None,
        }
    }
}

/// Creates `obj` (in `default` when namespaced and no namespace is given). With
/// `dry_run`, the API server validates and admits it without storing anything.
pub async fn create(
    client: &kube::Client,
    kinds: &KindRegistry,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<DynamicObject, ObjectError> {
    let types = obj.types.as_ref().ok_or(ObjectError::MissingType)?;
    let (group, version) = split_api_version(&types.api_version);
    let kind = kinds
        .resolve(group, version, &types.kind)
        .ok_or_else(|| ObjectError::UnknownKind(format!("{} {}", types.api_version, types.kind)))?;
    let resource = kind.resource(Some(version));
    let namespace = target_namespace(kind.namespaced, obj)?;
    let api = api_for(client, &api_resource(&resource), namespace);
    let params = PostParams {
        dry_run,
        field_manager: Some("portico".into()),
    };
    Ok(api.create(&params, obj).await?)
}

/// The namespace a new object goes to: its own, `default` when it names none, none for
/// a cluster-scoped kind. The name becomes a path segment of the request, so anything
/// that could bend the URL (`team/stacks/x`, `..`, `%2F`) is refused.
fn target_namespace(namespaced: bool, obj: &DynamicObject) -> Result<Option<&str>, ObjectError> {
    if !namespaced {
        return Ok(None);
    }
    let namespace = obj.metadata.namespace.as_deref().unwrap_or("default");
    if portico_core::resource::is_path_segment(namespace) {
        Ok(Some(namespace))
    } else {
        Err(ObjectError::BadNamespace(namespace.to_string()))
    }
}

/// Replaces an object (optimistic concurrency: the server refuses with 409 Conflict
/// when `obj.metadata.resourceVersion` is not the latest). With `dry_run`, nothing is
/// stored.
pub async fn replace(
    client: &kube::Client,
    resource: &portico_core::resource::ResourceRef,
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
    resource: &portico_core::resource::ResourceRef,
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
    resource: &portico_core::resource::ResourceRef,
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

pub(crate) fn api_resource(r: &portico_core::resource::ResourceRef) -> ApiResource {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn object_in(namespace: Option<&str>) -> DynamicObject {
        let mut obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}
        }))
        .expect("a ConfigMap");
        obj.metadata.namespace = namespace.map(String::from);
        obj
    }

    #[test]
    fn a_namespace_that_would_bend_the_request_path_is_refused() {
        for bad in [
            "team/stacks/x",
            "..",
            "../kube-system",
            "a/../b",
            "%2F",
            "team%2Fx",
            "a?b",
            "a#b",
            "a b",
            "A",
            "",
            "-a",
            "a\\b",
            "team\n",
            "é",
        ] {
            let err = target_namespace(true, &object_in(Some(bad)))
                .expect_err(&format!("{bad:?} must be refused"));
            assert!(
                matches!(err, ObjectError::BadNamespace(ref n) if n == bad),
                "{err}"
            );
        }
    }

    #[test]
    fn a_plain_namespace_default_and_cluster_scope_pass() {
        assert_eq!(
            target_namespace(true, &object_in(Some("team-a"))).ok(),
            Some(Some("team-a"))
        );
        assert_eq!(
            target_namespace(true, &object_in(None)).ok(),
            Some(Some("default"))
        );
        assert_eq!(
            target_namespace(false, &object_in(Some("team/x"))).ok(),
            Some(None)
        );
    }
}
