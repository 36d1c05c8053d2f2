//! The reconciler's reads: the watches' stores of every child kind and of the Stacks'
//! Pods, and of every object's name and owners, read through [`World`] by the plan.

use std::fmt::Debug;
use std::sync::Arc;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::change_filter::cached;
use super::desired::STACK_LABEL;
use super::plan::{Kind, World, controlled_by};

/// The watches' stores of every child kind and of the Stacks' Pods (labelled objects,
/// whole), and of every object's metadata under any name (for ownership checks).
pub(super) struct Stores {
    pub(super) statefulsets: Store<StatefulSet>,
    pub(super) deployments: Store<Deployment>,
    pub(super) services: Store<Service>,
    pub(super) pods: Store<Pod>,
    pub(super) names: Names,
    /// Set once every store above holds its first list.
    pub(super) first_lists: tokio::sync::OnceCell<()>,
}

pub(super) struct Names {
    pub(super) statefulsets: Store<PartialObjectMeta<StatefulSet>>,
    pub(super) deployments: Store<PartialObjectMeta<Deployment>>,
    pub(super) services: Store<PartialObjectMeta<Service>>,
    pub(super) claims: Store<PartialObjectMeta<PersistentVolumeClaim>>,
}

impl World for Stores {
    fn meta(&self, kind: Kind, namespace: &str, name: &str) -> Option<ObjectMeta> {
        let names = &self.names;
        match kind {
            Kind::StatefulSet => {
                cached(&names.statefulsets, namespace, name).map(|o| o.metadata.clone())
            }
            Kind::Deployment => {
                cached(&names.deployments, namespace, name).map(|o| o.metadata.clone())
            }
            Kind::Service => cached(&names.services, namespace, name).map(|o| o.metadata.clone()),
            // Never read: a name clash shows as the Stack's Pods failing to start.
            Kind::Secret => None,
            Kind::PersistentVolumeClaim => {
                cached(&names.claims, namespace, name).map(|o| o.metadata.clone())
            }
        }
    }

    fn statefulset(&self, namespace: &str, name: &str) -> Option<Arc<StatefulSet>> {
        cached(&self.statefulsets, namespace, name)
    }

    fn child(&self, kind: Kind, name: &str, stack: (&str, &str, &str)) -> Option<Option<String>> {
        match kind {
            Kind::StatefulSet => child_in(&self.statefulsets, name, stack),
            Kind::Deployment => child_in(&self.deployments, name, stack),
            Kind::Service => child_in(&self.services, name, stack),
            // Credentials are deleted by name (see `Plan::stale_credentials`); claims
            // are the StatefulSet's, not the Stack's.
            Kind::Secret | Kind::PersistentVolumeClaim => None,
        }
    }

    fn pods(&self, namespace: &str, stack: &str) -> Vec<Arc<Pod>> {
        self.pods
            .state()
            .into_iter()
            .filter(|p| {
                p.metadata.namespace.as_deref() == Some(namespace)
                    && p.labels().get(STACK_LABEL).map(String::as_str) == Some(stack)
            })
            .collect()
    }
}

/// The uid of the object named `name` in `store`, if the Stack `(namespace, name, uid)`
/// labels and controls it.
fn child_in<K: ChildObject>(
    store: &Store<K>,
    name: &str,
    (namespace, stack, uid): (&str, &str, &str),
) -> Option<Option<String>> {
    let child = cached(store, namespace, name)?;
    let labelled = child.labels().get(STACK_LABEL).map(String::as_str) == Some(stack);
    (labelled && controlled_by(child.meta(), uid)).then(|| child.meta().uid.clone())
}

impl Stores {
    /// Returns once every store has been filled by its first list (at once after that).
    pub(super) async fn ready(&self) {
        // One task waits on the stores; every other reconcile waits on the OnceCell.
        // `Store::wait_until_ready` keeps a single waker (kube-runtime 5's DelayedInit
        // polls one futures oneshot), so of many reconciles waiting on it directly only
        // the last to poll was woken, and the rest hung for ever (9 of 1,000 Stacks in
        // the benchmark never got a status).
        self.first_lists
            .get_or_init(|| async {
                // The only error is a dropped writer, which ends the controller anyway.
                let _ = futures::join!(
                    self.statefulsets.wait_until_ready(),
                    self.deployments.wait_until_ready(),
                    self.services.wait_until_ready(),
                    self.pods.wait_until_ready(),
                    self.names.statefulsets.wait_until_ready(),
                    self.names.deployments.wait_until_ready(),
                    self.names.services.wait_until_ready(),
                    self.names.claims.wait_until_ready(),
                );
            })
            .await;
    }
}

/// A namespaced kind the controller creates as a Stack's child.
pub(super) trait ChildObject:
    Resource<Scope = NamespaceResourceScope, DynamicType = ()>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
{
}

impl<K> ChildObject for K where
    K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
{
}
