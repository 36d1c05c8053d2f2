//! StackBindings: a Stack's details handed to a workload (someone's Deployment, or
//! another Stack) and taken out again, exactly.
use crate::kit::stacks::*;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, PostParams};
use portico_server::reconcile::binding::kind::StackBinding;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// A Deployment of someone's own, with a variable of theirs, accepting a binding's
/// variables under the prefixes `accepts` lists (its annotation, as the Bind button
/// writes it), if any.
async fn own_deployment(
    client: &kube::Client,
    ns: &str,
    name: &str,
    env: serde_json::Value,
    accepts: Option<&str>,
) {
    let annotations = match accepts {
        Some(prefixes) => json!({"portico.dev/binding-prefixes": prefixes}),
        None => json!({}),
    };
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "portico.local/app:1", "env": env}]},
            },
        },
    }))
    .expect("deployment");
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &deployment)
        .await
        .expect("their Deployment");
}

fn env_of(deployment: Option<&Deployment>) -> Vec<(String, String)> {
    deployment
        .and_then(|d| d.spec.as_ref())
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|e| {
            let from = e
                .value_from
                .and_then(|f| f.secret_key_ref)
                .map(|r| format!("secret {}/{}", r.name, r.key));
            (e.name, e.value.or(from).unwrap_or_default())
        })
        .collect()
}

async fn create_binding(client: &kube::Client, ns: &str, name: &str, spec: serde_json::Value) {
    let binding: StackBinding = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("binding");
    Api::<StackBinding>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .expect("create StackBinding");
}

/// The binding's Ready condition once it has one for its generation: (status, reason, message).
async fn binding_ready(client: &kube::Client, ns: &str, name: &str) -> (String, String, String) {
    let ready = |b: &StackBinding| {
        b.status.as_ref().and_then(|s| {
            (s.observed_generation == b.metadata.generation)
                .then(|| s.conditions.iter().find(|c| c.type_ == "Ready"))
                .flatten()
                .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
        })
    };
    until::<StackBinding>(client, ns, name, "a Ready condition", |b| {
        b.and_then(ready).is_some()
    })
    .await;
    let binding = Api::<StackBinding>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("binding");
    ready(&binding).expect("Ready")
}

#[tokio::test]
async fn a_binding_hands_a_stack_to_a_deployment_and_unbinding_takes_out_exactly_that() {
    let (client, ns, reconciler) = one_reconciler("stk-bind").await;
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    own_deployment(
        &client,
        &ns,
        "app",
        json!([{"name": "OWN", "value": "mine"}]),
        Some("MYSQL_"),
    )
    .await;
    let generation = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("app")
        .await
        .expect("Deployment")
        .metadata
        .generation;

    create_binding(
        &client,
        &ns,
        "app-db",
        json!({"stack": "db", "workload": {"kind": "Deployment", "name": "app"}}),
    )
    .await;
    let (status, reason, message) = binding_ready(&client, &ns, "app-db").await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "Bound"),
        "{message}"
    );
    assert!(message.contains("MYSQL_HOST"), "{message}");
    let host = format!("db.{ns}.svc");
    let bound = [
        ("OWN", "mine"),
        ("MYSQL_TYPE", "mysql"),
        ("MYSQL_PROVIDER", "portico"),
        ("MYSQL_HOST", host.as_str()),
        ("MYSQL_PORT", "3306"),
        ("MYSQL_DATABASE", "app"),
        ("MYSQL_USERNAME", "app"),
        ("MYSQL_PASSWORD", "secret db-credentials/app-password"),
        (
            "MYSQL_URL",
            "mysql://$(MYSQL_USERNAME):$(MYSQL_PASSWORD)@$(MYSQL_HOST):$(MYSQL_PORT)/$(MYSQL_DATABASE)",
        ),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    until::<Deployment>(&client, &ns, "app", "the variables in", |d| {
        env_of(d) == bound
    })
    .await;
    let rolled = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("app")
        .await
        .expect("Deployment")
        .metadata
        .generation;
    assert!(
        rolled > generation,
        "a new Pod template: the Deployment rolls"
    );

    // Unbinding: the binding goes once its variables are out; the person's own stays.
    Api::<StackBinding>::namespaced(client.clone(), &ns)
        .delete("app-db", &DeleteParams::default())
        .await
        .expect("unbind");
    until::<StackBinding>(&client, &ns, "app-db", "the binding gone", |b| b.is_none()).await;
    let after = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("app")
        .await
        .expect("Deployment");
    assert_eq!(
        env_of(Some(&after)),
        [("OWN".to_string(), "mine".to_string())]
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_binding_says_why_it_cannot_bind_and_binds_once_it_can() {
    let (client, ns, reconciler) = one_reconciler("stk-bind-not").await;
    // A variable of the person's own under a name the binding would set, and no
    // acceptance of the binding's variables yet.
    own_deployment(
        &client,
        &ns,
        "app",
        json!([{"name": "WEB_HOST", "value": "mine"}]),
        None,
    )
    .await;
    create_binding(
        &client,
        &ns,
        "app-web",
        json!({"stack": "web", "workload": {"kind": "Deployment", "name": "app"}, "envPrefix": "WEB_"}),
    )
    .await;
    let (status, reason, message) = binding_ready(&client, &ns, "app-web").await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "StackNotFound")
    );
    assert_eq!(message, "Stack web does not exist in this namespace.");

    // The Stack appears and gets an endpoint: the Deployment has not accepted WEB_
    // variables, so nothing is written, and the binding says how to accept them.
    create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    let has_reason = |reason: &'static str| {
        move |b: Option<&StackBinding>| {
            b.and_then(|b| b.status.as_ref())
                .is_some_and(|s| s.conditions.iter().any(|c| c.reason == reason))
        }
    };
    until::<StackBinding>(
        &client,
        &ns,
        "app-web",
        "not accepted",
        has_reason("NotAccepted"),
    )
    .await;
    let (_, _, message) = binding_ready(&client, &ns, "app-web").await;
    assert_eq!(
        message,
        "Deployment app does not accept variables starting with WEB_: whoever may change it \
         accepts them with the annotation portico.dev/binding-prefixes=WEB_."
    );
    // The person accepts them (the binding looks again within 30 s): it tries, and
    // the variable the person set is not taken from them.
    let accept = json!({"metadata": {"annotations": {"portico.dev/binding-prefixes": "WEB_"}}});
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .patch(
            "app",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&accept),
        )
        .await
        .expect("accept WEB_ variables");
    until::<StackBinding>(
        &client,
        &ns,
        "app-web",
        "refused for WEB_HOST",
        has_reason("VariableTaken"),
    )
    .await;
    let (_, _, message) = binding_ready(&client, &ns, "app-web").await;
    assert!(
        message.starts_with("Deployment app was not changed: ") && message.contains("WEB_HOST"),
        "{message}"
    );
    let own = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("app")
        .await
        .expect("Deployment");
    assert_eq!(
        env_of(Some(&own)),
        [("WEB_HOST".to_string(), "mine".to_string())]
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_stack_bound_to_another_stack_gets_its_details_and_keeps_them_through_its_own_reconciles()
{
    let (client, ns, reconciler) = one_reconciler("stk-bind-stack").await;
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    until::<Stack>(&client, &ns, "web", "Ready", |s| ready_with(s, 1)).await;
    create_binding(
        &client,
        &ns,
        "web-db",
        json!({"stack": "db", "workload": {"kind": "Stack", "name": "web"}}),
    )
    .await;
    let has = |d: Option<&Deployment>| {
        env_of(d)
            .iter()
            .any(|(k, v)| k == "MYSQL_PASSWORD" && v == "secret db-credentials/app-password")
    };
    until::<Deployment>(&client, &ns, "web", "the Stack's Deployment bound", has).await;
    let (status, reason, message) = binding_ready(&client, &ns, "web-db").await;
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "Bound"),
        "{message}"
    );
    assert!(message.starts_with("Deployment web gets "), "{message}");
    // Its own reconciler applies its Deployment again (a change of replicas): the
    // variables stay, being the binding's fields, not the Stack's.
    edit_stack(&client, &ns, "web", json!({"replicas": 2})).await;
    until::<Stack>(&client, &ns, "web", "Ready with 2", |s| ready_with(s, 2)).await;
    let web = Api::<Deployment>::namespaced(client.clone(), &ns)
        .get("web")
        .await
        .expect("Deployment");
    assert!(has(Some(&web)), "{:?}", env_of(Some(&web)));
    reconciler.shut_down().await;
}
