//! The binding picker's offer: where a Stack's details can go in its namespace, read
//! with the person's own client, each workload with whether they may bind it (the
//! rights `portico-stackbinding-access` asks: update on the workload, get on the
//! Stack's credentials Secret), and the variables it would get.

use std::collections::BTreeMap;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::api::{Api, ListParams, ObjectMeta};
use portico_core::payload::{BindingOffer, BindingTarget};

use super::asker::Asker;
use crate::auth::access::AccessQuestion;
use crate::cluster::error::ApiError;
use crate::reconcile::binding::kind::{StackBinding, bindings_of};
use crate::reconcile::binding::projection;
use crate::reconcile::desired::secret_name;
use crate::reconcile::stack::Stack;

/// Workloads of each kind offered at most: a picker, not a listing.
const MOST_PER_KIND: usize = 200;
/// Access reviews in flight at once for one offer.
const REVIEWS_AT_ONCE: usize = 8;

/// Stack `stack`'s offer in `namespace`.
pub async fn offer(
    asker: &Asker<'_>,
    namespace: &str,
    stack: &str,
) -> Result<BindingOffer, ApiError> {
    let client = asker.client;
    let the_stack = Api::<Stack>::namespaced(client.clone(), namespace)
        .get(stack)
        .await?;
    let (variables, blocked) = match projection::details(&the_stack) {
        Ok(details) => (
            described(&projection::variables(
                &projection::default_prefix(&details.choice),
                &details,
            )),
            None,
        ),
        Err(not_yet) => (Vec::new(), Some(not_yet.to_string())),
    };
    let params = ListParams::default().limit(MOST_PER_KIND as u32);
    let deployments = Api::<Deployment>::namespaced(client.clone(), namespace);
    let statefulsets = Api::<StatefulSet>::namespaced(client.clone(), namespace);
    let stacks = Api::<Stack>::namespaced(client.clone(), namespace);
    let bindings = Api::<StackBinding>::namespaced(client.clone(), namespace);
    let of_this_stack = bindings_of(stack);
    let (deployments, statefulsets, stacks, bindings) = futures::try_join!(
        deployments.list_metadata(&params),
        statefulsets.list_metadata(&params),
        stacks.list_metadata(&params),
        bindings.list(&of_this_stack),
    )?;
    // A Stack's own workload is offered as the Stack (its reconciler keeps the
    // variables through its own changes); the bound Stack is not offered to itself.
    let run_by_stack = |meta: &ObjectMeta| {
        meta.owner_references
            .iter()
            .flatten()
            .any(|o| o.kind == "Stack" && o.controller == Some(true))
    };
    let workloads = (deployments.items.iter())
        .map(|o| ("Deployment", &o.metadata))
        .chain(
            statefulsets
                .items
                .iter()
                .map(|o| ("StatefulSet", &o.metadata)),
        )
        .filter(|(_, meta)| !run_by_stack(meta));
    let other_stacks = (stacks.items.iter())
        .map(|s| ("Stack", &s.metadata))
        .filter(|(_, meta)| meta.name.as_deref() != Some(stack));
    let candidates: Vec<(&'static str, String)> = workloads
        .chain(other_stacks)
        .filter_map(|(kind, meta)| Some((kind, meta.name.clone()?)))
        .collect();
    let bound: BTreeMap<(String, String), String> = bindings
        .items
        .iter()
        .filter_map(|b| {
            Some((
                (
                    b.spec.workload.kind.as_str().to_string(),
                    b.spec.workload.name.clone(),
                ),
                b.metadata.name.clone()?,
            ))
        })
        .collect();
    let reads_password = match &blocked {
        Some(_) => true,
        None => {
            asker
                .may(AccessQuestion {
                    verb: "get".into(),
                    group: String::new(),
                    resource: "secrets".into(),
                    subresource: None,
                    namespace: Some(namespace.into()),
                    name: Some(secret_name(stack)),
                })
                .await?
        }
    };
    // Made here, not in a stream's closure: a closure there is not Send for every
    // lifetime, which the endpoint's future must be.
    let mut lookups = Vec::with_capacity(candidates.len());
    for (kind, name) in candidates {
        let bound_by = bound.get(&(kind.to_string(), name.clone())).cloned();
        lookups.push(target(
            asker,
            (namespace, stack),
            reads_password,
            (kind, name),
            bound_by,
        ));
    }
    let targets = futures::stream::iter(lookups)
        .buffered(REVIEWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await;
    let mut targets = targets.into_iter().collect::<Result<Vec<_>, _>>()?;
    // The ones the person may bind first, then by kind and name.
    targets.sort_by(|a, b| {
        (a.refused.is_some(), &a.kind, &a.name).cmp(&(b.refused.is_some(), &b.kind, &b.name))
    });
    Ok(BindingOffer {
        targets,
        variables,
        blocked,
    })
}

/// One workload, with whether the person may bind Stack `stack` into it.
async fn target(
    asker: &Asker<'_>,
    (namespace, stack): (&str, &str),
    reads_password: bool,
    (kind, name): (&'static str, String),
    bound_by: Option<String>,
) -> Result<BindingTarget, ApiError> {
    let (group, resource) = match kind {
        "Stack" => ("portico.dev", "stacks"),
        "StatefulSet" => ("apps", "statefulsets"),
        _ => ("apps", "deployments"),
    };
    let may_update = asker
        .may(AccessQuestion {
            verb: "update".into(),
            group: group.into(),
            resource: resource.into(),
            subresource: None,
            namespace: Some(namespace.into()),
            name: Some(name.clone()),
        })
        .await?;
    let refused = if !may_update {
        Some(format!(
            "You may not update {kind} {name}, which binding changes."
        ))
    } else if !reads_password {
        Some(format!(
            "You may not read Secret {}, whose password binding hands over.",
            secret_name(stack)
        ))
    } else {
        None
    };
    Ok(BindingTarget {
        kind: kind.to_string(),
        name,
        refused,
        bound_by,
    })
}

/// Each variable with what it holds; the password as where it is read from.
fn described(env: &[k8s_openapi::api::core::v1::EnvVar]) -> Vec<(String, String)> {
    env.iter()
        .map(|e| {
            let holds = match (
                &e.value,
                e.value_from
                    .as_ref()
                    .and_then(|f| f.secret_key_ref.as_ref()),
            ) {
                (Some(value), _) => value.clone(),
                (None, Some(secret)) => {
                    format!("read from Secret {}, key {}", secret.name, secret.key)
                }
                (None, None) => String::new(),
            };
            (e.name.clone(), holds)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_described_as_where_it_is_read_from() {
        let details = projection::Details {
            choice: "mysql".into(),
            host: "db.team.svc".into(),
            port: 3306,
            database: Some("app".into()),
            username: Some("app".into()),
            scheme: Some("mysql".into()),
            credentials: Some("db-credentials".into()),
        };
        let described = described(&projection::variables("MYSQL_", &details));
        let password = described
            .iter()
            .find(|(name, _)| name == "MYSQL_PASSWORD")
            .map(|(_, holds)| holds.as_str());
        assert_eq!(
            password,
            Some("read from Secret db-credentials, key app-password")
        );
        assert_eq!(described[2], ("MYSQL_HOST".into(), "db.team.svc".into()));
    }
}
