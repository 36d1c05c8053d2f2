//! The workload: a StatefulSet with a volume per replica for a stateful choice, else a
//! Deployment.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodTemplateSpec, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use super::{DATA_VOLUME, Shape, Workload, headless_name};

pub(super) fn workload(shape: &Shape, template: PodTemplateSpec) -> Workload {
    let selector = LabelSelector {
        match_labels: Some(shape.selector.clone()),
        ..Default::default()
    };
    if shape.entry.stateful {
        Workload::Stateful(Box::new(stateful_set(shape, selector, template)))
    } else {
        Workload::Stateless(Box::new(Deployment {
            metadata: shape.meta(shape.name.clone()),
            spec: Some(DeploymentSpec {
                replicas: Some(shape.spec.replicas),
                selector,
                template,
                ..Default::default()
            }),
            status: None,
        }))
    }
}

fn stateful_set(shape: &Shape, selector: LabelSelector, template: PodTemplateSpec) -> StatefulSet {
    let spec = shape.spec;
    let size = spec
        .storage
        .clone()
        .or_else(|| shape.plan.and_then(|p| p.storage.clone()))
        .or_else(|| shape.entry.default_storage.clone())
        .unwrap_or_else(|| "1Gi".into());
    let when_deleted = if shape.keeps_data { "Retain" } else { "Delete" };
    StatefulSet {
        metadata: shape.meta(shape.name.clone()),
        spec: Some(StatefulSetSpec {
            replicas: Some(spec.replicas),
            service_name: Some(headless_name(&shape.name)),
            // Ordered start-up would never replace a Pod that cannot be placed:
            // lowering the Stack's requests must roll it (kubernetes#67250).
            pod_management_policy: Some("Parallel".into()),
            // The controller then makes each claim owned by the StatefulSet, which
            // is how the reconciler tells its claims from ones planted under their
            // names; and deleting the Stack deletes its data with it.
            persistent_volume_claim_retention_policy: Some(
                StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: Some(when_deleted.into()),
                    when_scaled: Some("Retain".into()),
                },
            ),
            selector,
            template,
            volume_claim_templates: Some(vec![PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some(DATA_VOLUME.into()),
                    labels: Some(shape.selector.clone()),
                    ..Default::default()
                },
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".into()]),
                    storage_class_name: shape.entry.storage_class.clone(),
                    resources: Some(VolumeResourceRequirements {
                        requests: Some([("storage".to_string(), Quantity(size))].into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}
