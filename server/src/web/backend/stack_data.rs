//! What a Stack's deletion keeps: its volume claims and the Secret whose password opens
//! them (the delete dialog), and the claims kept after their Stack went (the Provision
//! page). Read with the person's own client: they see what their rights let them list.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use portico_core::payload::{DataVolume, StackData};

use crate::cluster::error::{ApiError, Failure, failure};
use crate::reconcile::binding::kind::{StackBinding, bindings_of};
use crate::reconcile::catalog::Catalog;
use crate::reconcile::desired::STACK_LABEL;
use crate::reconcile::stack::Stack;

/// Stack `name`'s policy, volumes and credentials Secret. A person who may read the
/// Stack but not list claims still gets the policy, with the volumes said unknown.
pub async fn stack_data(
    client: &kube::Client,
    catalog: &Catalog,
    namespace: &str,
    name: &str,
) -> Result<StackData, ApiError> {
    let stack = Api::<Stack>::namespaced(client.clone(), namespace)
        .get(name)
        .await?;
    let holds_data = catalog
        .get(&stack.spec.choice)
        .is_some_and(|entry| entry.stateful);
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace);
    let labelled = ListParams::default().labels(&format!("{STACK_LABEL}={name}"));
    let (volumes, volumes_unknown) = match claims.list(&labelled).await {
        Ok(list) => (list.items.iter().filter_map(volume).collect(), None),
        Err(e) if failure(&e) == Failure::Forbidden => (
            Vec::new(),
            Some(format!(
                "You may not list volume claims in {namespace}, so they are not listed here."
            )),
        ),
        Err(e) => return Err(e.into()),
    };
    let secret = stack
        .status
        .as_ref()
        .and_then(|s| s.credentials_secret.clone());
    // Its metadata only, with the person's rights: whether the Stack owns it.
    let secret_goes_with_it = match &secret {
        Some(name) => Api::<Secret>::namespaced(client.clone(), namespace)
            .get_metadata_opt(name)
            .await
            .ok()
            .flatten()
            .map(|s| {
                let uid = stack.metadata.uid.as_deref();
                s.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| Some(o.uid.as_str()) == uid)
            }),
        None => None,
    };
    let bindings = match Api::<StackBinding>::namespaced(client.clone(), namespace)
        .list(&bindings_of(name))
        .await
    {
        Ok(list) => Some(
            list.items
                .iter()
                .map(|b| {
                    let workload = &b.spec.workload;
                    (
                        format!("{} {}", workload.kind.as_str(), workload.name),
                        b.name_any(),
                    )
                })
                .collect(),
        ),
        Err(e) if failure(&e) == Failure::Forbidden => None,
        Err(e) => return Err(e.into()),
    };
    Ok(StackData {
        bindings,
        holds_data,
        keeps: stack.spec.deletion_policy.keeps_data(),
        volumes,
        volumes_unknown,
        secret,
        secret_goes_with_it,
    })
}

/// Claims labelled as a Stack's, owned by nothing, whose Stack no longer exists: what
/// deleting a Stack with deletionPolicy Retain left. (A live Stack that keeps its data
/// does not own its claims either; its existence is what tells them apart.)
pub async fn kept_volumes(client: &kube::Client) -> Result<Vec<DataVolume>, ApiError> {
    let labelled = ListParams::default().labels(STACK_LABEL);
    let claims = Api::<PersistentVolumeClaim>::all(client.clone())
        .list(&labelled)
        .await?;
    let stacks: HashSet<(String, String)> = Api::<Stack>::all(client.clone())
        .list_metadata(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|s| (s.namespace().unwrap_or_default(), s.name_any()))
        .collect();
    let mut kept: Vec<DataVolume> = claims
        .items
        .iter()
        .filter(|c| c.owner_references().is_empty())
        .filter_map(volume)
        .filter(|v| !stacks.contains(&(v.namespace.clone(), v.stack.clone())))
        .collect();
    kept.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(kept)
}

fn volume(claim: &PersistentVolumeClaim) -> Option<DataVolume> {
    let stack = claim.labels().get(STACK_LABEL)?.clone();
    let size = claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .map(|q| q.0.clone())
        .unwrap_or_default();
    Some(DataVolume {
        namespace: claim.namespace()?,
        name: claim.name_any(),
        stack,
        size,
        created: claim
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
    })
}
