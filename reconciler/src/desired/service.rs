//! The Services: the one clients connect to, and a stateful choice's headless one
//! that names each replica.

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{Shape, headless_name};

fn port(shape: &Shape) -> ServicePort {
    ServicePort {
        name: Some(shape.entry.port_name.clone()),
        port: shape.entry.port,
        target_port: Some(IntOrString::String(shape.entry.port_name.clone())),
        protocol: Some("TCP".into()),
        ..Default::default()
    }
}

pub(super) fn headless(shape: &Shape) -> Option<Service> {
    shape.entry.stateful.then(|| Service {
        metadata: shape.meta(headless_name(&shape.name)),
        spec: Some(ServiceSpec {
            cluster_ip: Some("None".into()),
            selector: Some(shape.selector.clone()),
            ports: Some(vec![port(shape)]),
            publish_not_ready_addresses: Some(true),
            ..Default::default()
        }),
        status: None,
    })
}

pub(super) fn service(shape: &Shape) -> Service {
    // Only an explicit request opens a port on every node.
    let exposure = if shape.spec.exposure == "NodePort" {
        "NodePort"
    } else {
        "ClusterIP"
    };
    Service {
        metadata: shape.meta(shape.name.clone()),
        spec: Some(ServiceSpec {
            type_: Some(exposure.into()),
            selector: Some(shape.selector.clone()),
            ports: Some(vec![port(shape)]),
            ..Default::default()
        }),
        status: None,
    }
}
