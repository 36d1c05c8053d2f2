//! The objects a Stack should own, computed from its spec and the catalog: pure, so
//! the reconciler applies the same thing every time (server-side apply makes a
//! repeated or half-finished reconcile converge instead of duplicating).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetSpec,
};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, HTTPGetAction,
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PodSecurityContext, PodSpec, PodTemplateSpec,
    Probe, ResourceRequirements, SeccompProfile, Secret, SecretKeySelector, SecurityContext,
    Service, ServicePort, ServiceSpec, TCPSocketAction, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::catalog::{CatalogEntry, Plan, ProbeSpec};
use super::stack::{API_VERSION, KIND, Stack, StackResources};

/// The label every child carries, naming its Stack (used to find children to remove).
pub const STACK_LABEL: &str = "portico.dev/stack";
/// The key of the password in the credentials Secret.
pub const PASSWORD_KEY: &str = "password";

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ChildrenError {
    #[error("the Stack has no name, namespace or uid yet")]
    Incomplete,
    #[error("the catalog offers no version {version:?} of {choice}; offered: {offered}")]
    UnknownVersion {
        choice: String,
        version: String,
        offered: String,
    },
    #[error("the catalog offers no plan {plan:?} of {choice}; offered: {offered}")]
    UnknownPlan {
        choice: String,
        plan: String,
        offered: String,
    },
}

/// The workload: a StatefulSet for stateful catalog entries, else a Deployment.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    Stateful(Box<StatefulSet>),
    Stateless(Box<Deployment>),
}

/// Everything one Stack owns.
#[derive(Debug, Clone, PartialEq)]
pub struct Children {
    pub secret: Option<Secret>,
    pub workload: Workload,
    pub headless: Option<Service>,
    pub service: Service,
}

/// The password a credentials Secret holds, if it holds a non-empty one (the portal
/// reads it as the person viewing the Stack; the reconciler never does).
pub fn password_in(secret: &Secret) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(PASSWORD_KEY))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .filter(|p| !p.is_empty())
}

pub fn secret_name(stack: &str) -> String {
    format!("{stack}-credentials")
}

pub fn headless_name(stack: &str) -> String {
    format!("{stack}-headless")
}

/// The name of a stateful Stack's volume claim template.
pub const DATA_VOLUME: &str = "data";

/// The claim the StatefulSet controller makes for `ordinal` of Stack `stack`.
pub fn claim_name(stack: &str, ordinal: i32) -> String {
    format!("{}{ordinal}", claim_prefix(stack))
}

/// What the names of Stack `stack`'s claims start with.
pub fn claim_prefix(stack: &str) -> String {
    format!("{DATA_VOLUME}-{stack}-")
}

/// On a credentials Secret no Stack owns (deletionPolicy Retain): the volume claims
/// whose data its password opens (their names' prefix), for whoever finds it kept.
pub const KEPT_WITH_ANNOTATION: &str = "portico.dev/opens-volumes";

fn meta(
    name: String,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    owner: &OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(namespace.to_string()),
        labels: Some(labels.clone()),
        owner_references: Some(vec![owner.clone()]),
        ..Default::default()
    }
}

/// The instance's requests and limits: the Stack's, then its plan's, then the
/// catalog's defaults, resource by resource (no Pod runs without limits).
fn resources(
    entry: &CatalogEntry,
    plan: Option<&Plan>,
    asked: Option<&StackResources>,
) -> ResourceRequirements {
    let none = BTreeMap::new();
    let (requests, limits) = match asked {
        Some(r) => entry.resources_within(plan, &r.requests, &r.limits),
        None => entry.resources_within(plan, &none, &none),
    };
    let quantities = |map: BTreeMap<String, String>| {
        (!map.is_empty()).then(|| map.into_iter().map(|(k, v)| (k, Quantity(v))).collect())
    };
    ResourceRequirements {
        requests: quantities(requests),
        limits: quantities(limits),
        ..Default::default()
    }
}

fn runtime_default_seccomp() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".into(),
        ..Default::default()
    }
}

/// The restricted profile as far as the image allows: never more privilege than it
/// starts with, no capabilities, the runtime's syscall filter, and a non-root user
/// where the catalog names one the image runs as.
fn container_security(run_as_user: Option<i64>) -> SecurityContext {
    SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        seccomp_profile: Some(runtime_default_seccomp()),
        run_as_non_root: run_as_user.map(|_| true),
        run_as_user,
        run_as_group: run_as_user,
        ..Default::default()
    }
}

fn probe(spec: &ProbeSpec, port: i32, initial_delay: i32) -> Probe {
    let mut probe = Probe {
        initial_delay_seconds: Some(initial_delay),
        period_seconds: Some(10),
        timeout_seconds: Some(5),
        failure_threshold: Some(3),
        ..Default::default()
    };
    if let Some(command) = &spec.exec {
        probe.exec = Some(ExecAction {
            command: Some(command.clone()),
        });
    } else if let Some(path) = &spec.http_get {
        probe.http_get = Some(HTTPGetAction {
            path: Some(path.clone()),
            port: IntOrString::Int(port),
            ..Default::default()
        });
    } else {
        probe.tcp_socket = Some(TCPSocketAction {
            port: IntOrString::Int(port),
            ..Default::default()
        });
    }
    probe
}

/// The controller ownerReference every child carries.
pub fn owner_reference(stack: &Stack) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: API_VERSION.into(),
        kind: KIND.into(),
        name: stack.metadata.name.clone()?,
        uid: stack.metadata.uid.clone()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// The children of `stack` as `entry` describes them; `password` fills the
/// credentials Secret (kept stable by the caller across reconciles).
pub fn desired(
    stack: &Stack,
    entry: &CatalogEntry,
    password: &str,
) -> Result<Children, ChildrenError> {
    let name = stack
        .metadata
        .name
        .clone()
        .ok_or(ChildrenError::Incomplete)?;
    let namespace = stack
        .metadata
        .namespace
        .clone()
        .ok_or(ChildrenError::Incomplete)?;
    let owner = owner_reference(stack).ok_or(ChildrenError::Incomplete)?;
    let spec = &stack.spec;
    let image = entry
        .image_for(spec.version.as_deref())
        .ok_or_else(|| ChildrenError::UnknownVersion {
            choice: spec.choice.clone(),
            version: spec.version.clone().unwrap_or_default(),
            offered: entry
                .versions
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        })?
        .to_string();
    let plan = entry
        .plan(spec.plan.as_deref())
        .map_err(|offered| ChildrenError::UnknownPlan {
            choice: spec.choice.clone(),
            plan: spec.plan.clone().unwrap_or_default(),
            offered,
        })?;
    let selector: BTreeMap<String, String> = [
        ("app.kubernetes.io/instance".to_string(), name.clone()),
        (STACK_LABEL.to_string(), name.clone()),
    ]
    .into();
    let mut labels = selector.clone();
    labels.insert("app.kubernetes.io/name".into(), spec.choice.clone());
    labels.insert("app.kubernetes.io/managed-by".into(), "portico".into());

    // Kept data needs its password: a Stack that keeps its volumes does not own the
    // Secret that opens them, so deleting the Stack leaves both.
    let keeps_data = entry.stateful && spec.deletion_policy.keeps_data();
    let secret_meta = if keeps_data {
        ObjectMeta {
            owner_references: None,
            annotations: Some([(KEPT_WITH_ANNOTATION.to_string(), claim_prefix(&name))].into()),
            ..meta(secret_name(&name), &namespace, &labels, &owner)
        }
    } else {
        meta(secret_name(&name), &namespace, &labels, &owner)
    };
    let secret = entry.password_env.as_ref().map(|_| Secret {
        metadata: secret_meta,
        string_data: None,
        data: Some(
            [(
                PASSWORD_KEY.to_string(),
                k8s_openapi::ByteString(password.as_bytes().to_vec()),
            )]
            .into(),
        ),
        type_: Some("Opaque".into()),
        ..Default::default()
    });

    let mut env: Vec<EnvVar> = entry
        .env
        .iter()
        .map(|(k, v)| EnvVar {
            name: k.clone(),
            value: Some(v.clone()),
            ..Default::default()
        })
        .collect();
    if let Some(var) = &entry.password_env {
        // By reference: the password never appears in the workload's spec.
        env.push(EnvVar {
            name: var.clone(),
            value_from: Some(EnvVarSource {
                secret_key_ref: Some(SecretKeySelector {
                    name: secret_name(&name),
                    key: PASSWORD_KEY.into(),
                    optional: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    let data_volume = DATA_VOLUME;
    let container = Container {
        name: spec.choice.clone(),
        image: Some(image),
        ports: Some(vec![ContainerPort {
            name: Some(entry.port_name.clone()),
            container_port: entry.port,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        env: (!env.is_empty()).then_some(env),
        readiness_probe: entry.readiness.as_ref().map(|p| probe(p, entry.port, 5)),
        liveness_probe: entry.liveness.as_ref().map(|p| probe(p, entry.port, 30)),
        resources: Some(resources(entry, plan, spec.resources.as_ref())),
        security_context: Some(container_security(entry.run_as_user)),
        // A container that fails leaves the end of its log as its termination
        // message, which the Stack's status quotes (no log read needed).
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: entry.stateful.then(|| {
            vec![VolumeMount {
                name: data_volume.into(),
                mount_path: entry.data_path.clone().unwrap_or_else(|| "/data".into()),
                ..Default::default()
            }]
        }),
        ..Default::default()
    };
    let template = PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels.clone()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container],
            // A database or servlet container has no business with the API server.
            automount_service_account_token: Some(false),
            security_context: Some(PodSecurityContext {
                // The group that owns mounted volumes, so the unprivileged user can write.
                fs_group: entry.run_as_user,
                seccomp_profile: Some(runtime_default_seccomp()),
                ..Default::default()
            }),
            ..Default::default()
        }),
    };
    let label_selector = LabelSelector {
        match_labels: Some(selector.clone()),
        ..Default::default()
    };
    let workload = if entry.stateful {
        let size = spec
            .storage
            .clone()
            .or_else(|| plan.and_then(|p| p.storage.clone()))
            .or_else(|| entry.default_storage.clone())
            .unwrap_or_else(|| "1Gi".into());
        Workload::Stateful(Box::new(StatefulSet {
            metadata: meta(name.clone(), &namespace, &labels, &owner),
            spec: Some(StatefulSetSpec {
                replicas: Some(spec.replicas),
                service_name: Some(headless_name(&name)),
                // Ordered start-up would never replace a Pod that cannot be placed:
                // lowering the Stack's requests must roll it (kubernetes#67250).
                pod_management_policy: Some("Parallel".into()),
                // The controller then makes each claim owned by the StatefulSet, which
                // is how the reconciler tells its claims from ones planted under their
                // names; and deleting the Stack deletes its data with it.
                persistent_volume_claim_retention_policy: Some(
                    StatefulSetPersistentVolumeClaimRetentionPolicy {
                        when_deleted: Some(if keeps_data { "Retain" } else { "Delete" }.into()),
                        when_scaled: Some("Retain".into()),
                    },
                ),
                selector: label_selector,
                template,
                volume_claim_templates: Some(vec![PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(data_volume.into()),
                        labels: Some(selector.clone()),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeClaimSpec {
                        access_modes: Some(vec!["ReadWriteOnce".into()]),
                        storage_class_name: entry.storage_class.clone(),
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
        }))
    } else {
        Workload::Stateless(Box::new(Deployment {
            metadata: meta(name.clone(), &namespace, &labels, &owner),
            spec: Some(DeploymentSpec {
                replicas: Some(spec.replicas),
                selector: label_selector,
                template,
                ..Default::default()
            }),
            status: None,
        }))
    };
    let port = ServicePort {
        name: Some(entry.port_name.clone()),
        port: entry.port,
        target_port: Some(IntOrString::String(entry.port_name.clone())),
        protocol: Some("TCP".into()),
        ..Default::default()
    };
    let headless = entry.stateful.then(|| Service {
        metadata: meta(headless_name(&name), &namespace, &labels, &owner),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(selector.clone()),
            ports: Some(vec![port.clone()]),
            publish_not_ready_addresses: Some(true),
            ..Default::default()
        }),
        status: None,
    });
    // Only an explicit request opens a port on every node.
    let exposure = if spec.exposure == "NodePort" {
        "NodePort"
    } else {
        "ClusterIP"
    };
    let service = Service {
        metadata: meta(name, &namespace, &labels, &owner),
        spec: Some(ServiceSpec {
            type_: Some(exposure.into()),
            selector: Some(selector),
            ports: Some(vec![port]),
            ..Default::default()
        }),
        status: None,
    };
    Ok(Children {
        secret,
        workload,
        headless,
        service,
    })
}

/// A password from the operating system's random source: 24 characters from an
/// alphabet that needs no quoting in shells or connection strings.
pub fn generate_password() -> Result<String, ring::error::Unspecified> {
    use ring::rand::SecureRandom;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789";
    let mut bytes = [0u8; 24];
    ring::rand::SystemRandom::new().fill(&mut bytes)?;
    Ok(bytes
        .iter()
        .filter_map(|b| ALPHABET.get(usize::from(*b) % ALPHABET.len()))
        .map(|c| char::from(*c))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::catalog::Catalog;
    use super::super::stack::StackSpec;
    use super::*;

    fn stack(choice: &str) -> Stack {
        Stack {
            metadata: ObjectMeta {
                name: Some("shop".into()),
                namespace: Some("team-a".into()),
                uid: Some("u-1".into()),
                ..Default::default()
            },
            spec: StackSpec {
                choice: choice.into(),
                replicas: 2,
                exposure: "NodePort".into(),
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn child_pods_run_restricted_without_a_token_and_no_password_in_any_command() {
        let catalog = Catalog::load(None).expect("catalog");
        for choice in ["mysql", "tomcat"] {
            let entry = catalog.get(choice).expect("entry");
            let c = desired(&stack(choice), entry, "pw-xyz").expect("children");
            let pod = match &c.workload {
                Workload::Stateful(sts) => sts.spec.as_ref().map(|s| &s.template),
                Workload::Stateless(d) => d.spec.as_ref().map(|s| &s.template),
            }
            .and_then(|t| t.spec.as_ref())
            .expect("pod spec");
            assert_eq!(pod.automount_service_account_token, Some(false), "{choice}");
            let container = &pod.containers[0];
            let security = container.security_context.as_ref().expect("security");
            assert_eq!(security.allow_privilege_escalation, Some(false), "{choice}");
            assert_eq!(
                security.capabilities.as_ref().and_then(|c| c.drop.clone()),
                Some(vec!["ALL".to_string()])
            );
            assert_eq!(
                security.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
                Some("RuntimeDefault")
            );
            let probes = serde_json::to_string(&(
                &container.readiness_probe,
                &container.liveness_probe,
                &container.command,
                &container.args,
            ))
            .expect("json");
            assert!(
                !probes.contains("PASSWORD") && !probes.contains("pw-xyz"),
                "{probes}"
            );
        }
        let mysql =
            desired(&stack("mysql"), catalog.get("mysql").expect("mysql"), "pw").expect("children");
        let Workload::Stateful(sts) = &mysql.workload else {
            panic!("a StatefulSet")
        };
        let pod = sts
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod");
        let security = pod.containers[0]
            .security_context
            .as_ref()
            .expect("security");
        assert_eq!(
            security.run_as_non_root,
            Some(true),
            "MySQL's image runs as mysql"
        );
        assert_eq!(security.run_as_user, Some(999));
        assert_eq!(
            pod.security_context.as_ref().and_then(|s| s.fs_group),
            Some(999),
            "and owns its volume"
        );
    }

    #[test]
    fn mysql_gets_a_statefulset_with_storage_a_headless_service_and_a_secret() {
        let catalog = Catalog::load(None).expect("catalog");
        let mut s = stack("mysql");
        s.spec.storage = Some("5Gi".into());
        let c = desired(&s, catalog.get("mysql").expect("mysql"), "pw").expect("children");
        let Workload::Stateful(sts) = &c.workload else {
            panic!("a StatefulSet")
        };
        let spec = sts.spec.as_ref().expect("spec");
        assert_eq!(spec.replicas, Some(2));
        assert_eq!(spec.service_name.as_deref(), Some("shop-headless"));
        let claim = &spec.volume_claim_templates.as_ref().expect("claims")[0];
        let size = &claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .expect("size")["storage"];
        assert_eq!(size.0, "5Gi");
        let container = &spec.template.spec.as_ref().expect("pod").containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("docker.io/library/mysql:8.4")
        );
        assert!(container.readiness_probe.is_some() && container.liveness_probe.is_some());
        let env = container.env.as_ref().expect("env");
        let password = env
            .iter()
            .find(|e| e.name == "MYSQL_ROOT_PASSWORD")
            .expect("password env");
        assert_eq!(password.value, None, "the password goes by reference");
        assert_eq!(
            c.headless
                .as_ref()
                .and_then(|h| h.spec.as_ref())
                .and_then(|s| s.cluster_ip.as_deref()),
            Some("None")
        );
        assert_eq!(
            c.service.spec.as_ref().and_then(|s| s.type_.as_deref()),
            Some("NodePort")
        );
        let secret = c.secret.expect("secret");
        assert_eq!(secret.metadata.name.as_deref(), Some("shop-credentials"));
        let owner = &sts.metadata.owner_references.as_ref().expect("owners")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.controller),
            ("Stack", Some(true))
        );
    }

    #[test]
    fn a_stack_that_keeps_its_data_does_not_own_its_volumes_or_their_password() {
        let catalog = Catalog::load(None).expect("catalog");
        let entry = catalog.get("mysql").expect("mysql");
        let retention = |c: &Children| match &c.workload {
            Workload::Stateful(set) => set
                .spec
                .as_ref()
                .and_then(|s| s.persistent_volume_claim_retention_policy.clone())
                .and_then(|p| p.when_deleted),
            Workload::Stateless(_) => None,
        };
        let secret_owners = |c: &Children| {
            c.secret
                .as_ref()
                .and_then(|s| s.metadata.owner_references.clone())
        };
        let kept = desired(&stack("mysql"), entry, "pw").expect("children");
        assert_eq!(retention(&kept).as_deref(), Some("Retain"));
        assert_eq!(secret_owners(&kept), None);
        let secret = kept.secret.as_ref().expect("a Secret");
        assert_eq!(
            secret.metadata.annotations.as_ref().expect("annotations")[KEPT_WITH_ANNOTATION],
            "data-shop-"
        );
        let mut deleting = stack("mysql");
        deleting.spec.deletion_policy = crate::reconcile::stack::DeletionPolicy::Delete;
        let removed = desired(&deleting, entry, "pw").expect("children");
        assert_eq!(retention(&removed).as_deref(), Some("Delete"));
        assert_eq!(secret_owners(&removed).map(|o| o.len()), Some(1));
    }

    #[test]
    fn tomcat_gets_a_deployment_and_a_service_only() {
        let catalog = Catalog::load(None).expect("catalog");
        let mut s = stack("tomcat");
        s.spec.exposure = "ClusterIP".into();
        s.spec.version = Some("11.0".into());
        let c = desired(&s, catalog.get("tomcat").expect("tomcat"), "").expect("children");
        let Workload::Stateless(d) = &c.workload else {
            panic!("a Deployment")
        };
        let container = &d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod")
            .containers[0];
        assert_eq!(
            container.image.as_deref(),
            Some("docker.io/library/tomcat:11.0")
        );
        assert!(c.secret.is_none() && c.headless.is_none());
        assert_eq!(
            c.service.spec.as_ref().and_then(|s| s.type_.as_deref()),
            Some("ClusterIP")
        );
    }

    #[test]
    fn an_unknown_version_or_an_unsaved_stack_is_an_error() {
        let catalog = Catalog::load(None).expect("catalog");
        let mut s = stack("tomcat");
        s.spec.version = Some("7".into());
        let err =
            desired(&s, catalog.get("tomcat").expect("tomcat"), "").expect_err("unknown version");
        assert!(err.to_string().contains("10.1, 11.0"));
        let mut unsaved = stack("tomcat");
        unsaved.metadata.uid = None;
        assert_eq!(
            desired(&unsaved, catalog.get("tomcat").expect("tomcat"), ""),
            Err(ChildrenError::Incomplete)
        );
    }

    #[test]
    fn passwords_are_random_and_unquoted() {
        let a = generate_password().expect("random");
        let b = generate_password().expect("random");
        assert_eq!(a.len(), 24);
        assert_ne!(a, b);
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
    }
}
