//! What the reconciler reads of each child: the readiness status is derived from,
//! and ([`Relevant`]) what of a watched object triggers a reconcile when it changes.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, Service};

use super::change_filter::{self, Relevant, hash_json};
use super::{containers, scheduling};

impl Relevant for StatefulSet {
    fn relevant(&self) -> u64 {
        hash_json(&(
            change_filter::marker(self),
            as_status_reads(statefulset_readiness(self)),
        ))
    }
}

impl Relevant for Deployment {
    fn relevant(&self) -> u64 {
        hash_json(&(
            change_filter::marker(self),
            as_status_reads(deployment_readiness(self)),
        ))
    }
}

/// Of `(ready replicas, rolled out)`, what status is derived from: the count, and
/// whether the rollout is done with every replica ready (the controller noting the new
/// spec while no replica is ready yet changes nothing a person sees).
fn as_status_reads((ready, rolled_out): (i32, bool)) -> (i32, bool) {
    (ready, rolled_out && ready > 0)
}

impl Relevant for Service {
    fn relevant(&self) -> u64 {
        let meta = &self.metadata;
        hash_json(&(&self.spec, &meta.labels, &meta.owner_references))
    }
}

/// Pods only for what they tell the Stack's status: whether they can be placed, a
/// container trouble, a container running but not ready yet.
impl Relevant for Pod {
    fn relevant(&self) -> u64 {
        change_filter::hash_of(&(
            scheduling::pod_problem(self),
            containers::unready_since(self),
        ))
    }
}

/// What the reconciler reads of a StatefulSet: ready replicas, and whether the
/// controller has rolled out its latest spec to every replica. (Its watch triggers a
/// reconcile only when these, its generation or its controller change.)
pub(super) fn statefulset_readiness(set: &StatefulSet) -> (i32, bool) {
    // Borrowed, not cloned: this runs on every event of the StatefulSets' watch.
    let status = set.status.as_ref();
    let wanted = set.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let updated = status.map_or(0, |s| s.updated_replicas.unwrap_or(s.replicas));
    (
        status.and_then(|s| s.ready_replicas).unwrap_or(0),
        status.and_then(|s| s.observed_generation) >= set.metadata.generation && updated >= wanted,
    )
}

/// What the reconciler reads of a Deployment: ready replicas, and whether the
/// controller has seen its latest spec.
pub(super) fn deployment_readiness(deployment: &Deployment) -> (i32, bool) {
    let status = deployment.status.as_ref();
    (
        status.and_then(|s| s.ready_replicas).unwrap_or(0),
        status.and_then(|s| s.observed_generation) >= deployment.metadata.generation,
    )
}
