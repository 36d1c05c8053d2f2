//! The Bind button's write, as the person: the workload first accepts the binding's
//! prefix (its annotation [`projection::ACCEPTED_PREFIXES`], which only someone who may
//! update the workload can write, and without which admission lets the reconciler add
//! no variable to it), then the StackBinding is made. A Stack bound to another Stack
//! needs no acceptance: the target is that Stack's own workload.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};

use crate::cluster::error::{ApiError, Failure};
use crate::reconcile::binding::kind::{StackBinding, WorkloadKind};
use crate::reconcile::binding::projection;
use crate::reconcile::stack::Stack;

/// The prefix the Bind button added to a workload's acceptance, to take out again if
/// the binding is refused.
pub struct Accepted {
    workloads: Api<DynamicObject>,
    name: String,
    prefix: String,
}

/// Has `binding`'s workload accept the binding's prefix, as `client`. `None` when
/// nothing was written: a Stack's workload, or the prefix already accepted.
pub async fn accept(
    client: &kube::Client,
    namespace: &str,
    binding: &StackBinding,
) -> Result<Option<Accepted>, ApiError> {
    let resource = match binding.spec.workload.kind {
        WorkloadKind::Deployment => ApiResource::erase::<Deployment>(&()),
        WorkloadKind::StatefulSet => ApiResource::erase::<StatefulSet>(&()),
        WorkloadKind::Stack => return Ok(None),
    };
    // The prefix: the binding's own, else the Stack's choice. A Stack that is not there
    // (yet), or that the person may not read, has none to accept: the binding is made
    // and says so, as one made with kubectl would.
    let choice = match binding.spec.env_prefix.as_deref().filter(|p| !p.is_empty()) {
        Some(_) => String::new(),
        None => {
            let stack = Api::<Stack>::namespaced(client.clone(), namespace)
                .get_opt(&binding.spec.stack)
                .await;
            match stack {
                Ok(Some(stack)) => stack.spec.choice,
                Ok(None) => return Ok(None),
                Err(e) if crate::cluster::error::failure(&e) == Failure::Forbidden => {
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let prefix = projection::prefix(binding, &choice);
    let workloads = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
    let name = binding.spec.workload.name.clone();
    let workload = workloads.get(&name).await?;
    let Some(after) = projection::accepting(
        projection::acceptance(&workload.metadata).as_deref(),
        &prefix,
    ) else {
        return Ok(None);
    };
    write(&workloads, workload, Some(after)).await?;
    Ok(Some(Accepted {
        workloads,
        name,
        prefix,
    }))
}

impl Accepted {
    /// Takes the prefix it added out again (the binding was refused), leaving whatever
    /// else the annotation holds by now: best effort, as an acceptance without a
    /// binding changes nothing by itself.
    pub async fn undo(self) {
        let mut undone = Ok(());
        // A workload's controller writing its status between the read and the update
        // makes the update a conflict: read it again and take the prefix out of that.
        for _ in 0..UNDO_ATTEMPTS {
            undone = match self.workloads.get(&self.name).await {
                Ok(workload) => {
                    let left = projection::without(
                        projection::acceptance(&workload.metadata).as_deref(),
                        &self.prefix,
                    );
                    write(&self.workloads, workload, left).await
                }
                Err(error) => Err(error),
            };
            if !matches!(&undone, Err(kube::Error::Api(status)) if status.code == 409) {
                break;
            }
        }
        if let Err(error) = undone {
            tracing::info!(%error, workload = %self.name, "the acceptance of a refused binding stays");
        }
    }
}

/// Reads and updates an undo tries before it leaves the acceptance in place.
const UNDO_ATTEMPTS: usize = 5;

/// Writes the annotation as `value` (`None`: without it) with an update, the verb
/// admission asks of whoever binds a workload, and at the version read: a change in
/// between is a conflict, never a lost write.
async fn write(
    workloads: &Api<DynamicObject>,
    mut workload: DynamicObject,
    value: Option<String>,
) -> Result<(), kube::Error> {
    let name = workload.metadata.name.clone().unwrap_or_default();
    let annotations = workload
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    match value {
        Some(value) => annotations.insert(projection::ACCEPTED_PREFIXES.to_string(), value),
        None => annotations.remove(projection::ACCEPTED_PREFIXES),
    };
    workloads
        .replace(&name, &PostParams::default(), &workload)
        .await
        .map(|_| ())
}
