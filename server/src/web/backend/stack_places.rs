//! Where the person can provision: the namespaces they may list, those they may
//! create a Stack in first (an access review each, made as them), so the Provision
//! form starts in a namespace of their own rather than `default`.

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use portico_core::payload::StackPlace;

use super::asker::Asker;
use crate::auth::access::AccessQuestion;
use crate::cluster::error::{ApiError, Failure};

/// Namespaces asked about at most: a picker, not a listing.
const MOST_NAMESPACES: u32 = 500;
/// Access reviews in flight at once.
const REVIEWS_AT_ONCE: usize = 8;

/// The namespaces, those the person may create a Stack in first, each group by name.
/// Empty when they may not list namespaces (a team's access often does not): the form
/// then asks them to type theirs.
pub async fn places(asker: &Asker<'_>) -> Result<Vec<StackPlace>, ApiError> {
    let api: Api<Namespace> = Api::all(asker.client.clone());
    let listed = api
        .list_metadata(&ListParams::default().limit(MOST_NAMESPACES))
        .await;
    let names: Vec<String> = match listed {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|n| n.metadata.name)
            .collect(),
        Err(e) => {
            let e = ApiError::from(e);
            if e.failure() == Failure::Forbidden {
                return Ok(Vec::new());
            }
            return Err(e);
        }
    };
    let mut asks = Vec::with_capacity(names.len());
    for namespace in names {
        asks.push(place(asker, namespace));
    }
    let mut places = futures::stream::iter(asks)
        .buffered(REVIEWS_AT_ONCE)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    places.sort_by(|a, b| (!a.may_create, &a.namespace).cmp(&(!b.may_create, &b.namespace)));
    Ok(places)
}

async fn place(asker: &Asker<'_>, namespace: String) -> Result<StackPlace, ApiError> {
    let may_create = asker
        .may(AccessQuestion {
            verb: "create".into(),
            group: "portico.dev".into(),
            resource: "stacks".into(),
            subresource: None,
            namespace: Some(namespace.clone()),
            name: None,
        })
        .await?;
    Ok(StackPlace {
        namespace,
        may_create,
    })
}
