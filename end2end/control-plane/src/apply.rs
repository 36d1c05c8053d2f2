//! Server-side apply of YAML manifests (CRDs first, each waited on until Established),
//! used to load Portico's CRDs and the seed fixtures as demo and test data.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::runtime::wait::{await_condition, conditions};
use serde::Deserialize;

const FIELD_MANAGER: &str = "portico-fixtures";

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_yaml::Error,
    },
    #[error("{path}: a document has no apiVersion/kind or metadata.name")]
    Incomplete { path: PathBuf },
    #[error("resolving {gvk:?}: {source}")]
    Discovery {
        gvk: Box<GroupVersionKind>,
        #[source]
        source: kube::Error,
    },
    #[error("applying {what}: {source}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("CRD {0} did not become Established")]
    NotEstablished(String),
    #[error("API {0} did not become available in discovery")]
    NotDiscoverable(String),
}

/// Reads every document of a YAML file as a dynamic object.
pub fn read_documents(path: &Path) -> Result<Vec<DynamicObject>, ApplyError> {
    let text = std::fs::read_to_string(path).map_err(|source| ApplyError::Read {
        path: path.into(),
        source,
    })?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value = serde_yaml::Value::deserialize(doc).map_err(|source| ApplyError::Parse {
            path: path.into(),
            source,
        })?;
        if value.is_null() {
            continue;
        }
        let obj: DynamicObject =
            serde_yaml::from_value(value).map_err(|source| ApplyError::Parse {
                path: path.into(),
                source,
            })?;
        if obj.types.is_none() || obj.metadata.name.is_none() {
            return Err(ApplyError::Incomplete { path: path.into() });
        }
        out.push(obj);
    }
    Ok(out)
}

/// The `*.yaml` files of a directory in name order, leaving out `*-invalid.yaml`
/// (fixtures that exist to be rejected by the API server).
pub fn manifest_files(dir: &Path) -> Result<Vec<PathBuf>, ApplyError> {
    let entries = std::fs::read_dir(dir).map_err(|source| ApplyError::Read {
        path: dir.into(),
        source,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            // A kustomization.yaml is kustomize's index of the directory, not an object.
            (name.ends_with(".yaml") || name.ends_with(".yml"))
                && !name.contains("-invalid.")
                && !name.starts_with("kustomization.")
        })
        .collect();
    files.sort();
    Ok(files)
}

fn gvk_of(obj: &DynamicObject) -> Option<GroupVersionKind> {
    let types = obj.types.as_ref()?;
    let (group, version) = match types.api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), types.api_version.clone()),
    };
    Some(GroupVersionKind::gvk(&group, &version, &types.kind))
}

/// Applies `objects`: CRDs first (waiting until each is Established), then the rest.
/// Namespaced objects without a namespace go to `default`. Returns "kind/name" of each.
pub async fn apply_all(
    client: &kube::Client,
    objects: Vec<DynamicObject>,
) -> Result<Vec<String>, ApplyError> {
    let (crds, rest): (Vec<_>, Vec<_>) = objects.into_iter().partition(|o| {
        o.types
            .as_ref()
            .is_some_and(|t| t.kind == "CustomResourceDefinition")
    });
    let mut applied = Vec::new();
    let crd_api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in &crds {
        applied.push(apply_one(client, crd, false).await?);
    }
    let api_services: Api<APIService> = Api::all(client.clone());
    for crd in &crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let established = await_condition(crd_api.clone(), &name, conditions::is_crd_established());
        match tokio::time::timeout(Duration::from_secs(30), established).await {
            Ok(Ok(Some(crd))) => {
                // Established is not yet discoverable: the aggregator registers each
                // group-version a moment later, and objects of the kind are resolved
                // through discovery. Wait for that too (on a loaded machine the gap
                // was long enough to fail an apply).
                for version in crd.spec.versions.iter().filter(|v| v.served) {
                    let service = format!("{}.{}", version.name, crd.spec.group);
                    let available = await_condition(
                        api_services.clone(),
                        &service,
                        |s: Option<&APIService>| {
                            s.and_then(|s| s.status.as_ref())
                                .and_then(|s| s.conditions.as_ref())
                                .is_some_and(|c| {
                                    c.iter()
                                        .any(|c| c.type_ == "Available" && c.status == "True")
                                })
                        },
                    );
                    match tokio::time::timeout(Duration::from_secs(30), available).await {
                        Ok(Ok(_)) => {}
                        _ => return Err(ApplyError::NotDiscoverable(service)),
                    }
                }
            }
            _ => return Err(ApplyError::NotEstablished(name)),
        }
    }
    for obj in &rest {
        applied.push(apply_one(client, obj, false).await?);
    }
    Ok(applied)
}

/// Server-side dry-run apply of each of `objects` (the API server validates and
/// admits them; nothing is stored). Returns "kind/name" of each.
pub async fn dry_run_all(
    client: &kube::Client,
    objects: &[DynamicObject],
) -> Result<Vec<String>, ApplyError> {
    let mut checked = Vec::new();
    for obj in objects {
        checked.push(apply_one(client, obj, true).await?);
    }
    Ok(checked)
}

async fn apply_one(
    client: &kube::Client,
    obj: &DynamicObject,
    dry_run: bool,
) -> Result<String, ApplyError> {
    let gvk = gvk_of(obj).ok_or(ApplyError::Incomplete {
        path: PathBuf::from("<object>"),
    })?;
    let name = obj.metadata.name.clone().unwrap_or_default();
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| ApplyError::Discovery {
            gvk: Box::new(gvk.clone()),
            source,
        })?;
    let api: Api<DynamicObject> = match caps.scope {
        kube::discovery::Scope::Namespaced => {
            let ns = obj.metadata.namespace.as_deref().unwrap_or("default");
            Api::namespaced_with(client.clone(), ns, &resource)
        }
        kube::discovery::Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let what = format!("{}/{}", gvk.kind, name);
    let mut params = PatchParams::apply(FIELD_MANAGER).force();
    params.dry_run = dry_run;
    api.patch(&name, &params, &Patch::Apply(obj))
        .await
        .map_err(|source| ApplyError::Api {
            what: what.clone(),
            source,
        })?;
    Ok(what)
}
