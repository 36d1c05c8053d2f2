//! The Pod template: one container of the catalog's image, restricted, with its
//! probes, resources, environment and data mount.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EnvVar, EnvVarSource, ExecAction, HTTPGetAction,
    Lifecycle, LifecycleHandler, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, SecretKeySelector, SecurityContext, TCPSocketAction,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{ADMIN_PASSWORD_KEY, DATA_VOLUME, PASSWORD_KEY, Shape, secret_name};
use crate::catalog::{CatalogEntry, Plan, ProbeSpec};
use crate::stack::StackResources;

pub(super) fn template(shape: &Shape) -> PodTemplateSpec {
    let entry = shape.entry;
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(shape.labels.clone()),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container(shape)],
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
    }
}

fn container(shape: &Shape) -> Container {
    let entry = shape.entry;
    let env = env(shape);
    Container {
        name: shape.spec.choice.clone(),
        image: Some(shape.image.clone()),
        ports: Some(vec![ContainerPort {
            name: Some(entry.port_name.clone()),
            container_port: entry.port,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
        env: (!env.is_empty()).then_some(env),
        readiness_probe: entry.readiness.as_ref().map(|p| probe(p, entry.port, 5)),
        liveness_probe: entry.liveness.as_ref().map(|p| probe(p, entry.port, 30)),
        lifecycle: entry.post_start.as_ref().map(|command| Lifecycle {
            post_start: Some(LifecycleHandler {
                exec: Some(ExecAction {
                    command: Some(command.clone()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        resources: Some(resources(entry, shape.plan, shape.spec.resources.as_ref())),
        security_context: Some(container_security(entry.run_as_user)),
        // A container that fails leaves the end of its log as its termination
        // message, which the Stack's status quotes (no log read needed).
        termination_message_policy: Some("FallbackToLogsOnError".into()),
        volume_mounts: entry.stateful.then(|| {
            vec![VolumeMount {
                name: DATA_VOLUME.into(),
                mount_path: entry.data_path.clone().unwrap_or_else(|| "/data".into()),
                ..Default::default()
            }]
        }),
        ..Default::default()
    }
}

/// The catalog's variables, the user's name, and the passwords by reference: they
/// never appear in the workload's spec.
fn env(shape: &Shape) -> Vec<EnvVar> {
    let entry = shape.entry;
    let literal = |name: &String, value: &String| EnvVar {
        name: name.clone(),
        value: Some(value.clone()),
        ..Default::default()
    };
    let mut env: Vec<EnvVar> = entry.env.iter().map(|(k, v)| literal(k, v)).collect();
    if let (Some(var), Some(user)) = (&entry.user_env, &entry.user) {
        env.push(literal(var, user));
    }
    let password = |name: &String, key: &str| EnvVar {
        name: name.clone(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret_name(&shape.name),
                key: key.into(),
                optional: Some(false),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    if let Some(var) = &entry.password_env {
        env.push(password(var, PASSWORD_KEY));
        if let Some(admin) = &entry.admin {
            env.push(password(&admin.password_env, ADMIN_PASSWORD_KEY));
        }
    }
    env
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
