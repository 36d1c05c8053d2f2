//! The Stack reconciler against a small real cluster: kube-apiserver with the real
//! controller-manager and scheduler, and simulated (KWOK) nodes that report the Pods
//! placed on them Running and Ready. Nothing here plays a controller's part: a Stack is
//! Ready because its workload's Pods are. Each test works in its own namespace with its
//! own reconciler (scoped to that namespace) and its own leader Lease. Bindings are in
//! [`bindings`], plans and versions in [`plans`].

mod bindings;
mod plans;

use crate::kit::stacks::*;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use portico_server::reconcile::metrics::{self, Metrics};
use portico_server::reconcile::stack::Stack;
use serde_json::json;

#[tokio::test]
async fn mysql_gets_its_children_becomes_ready_follows_edits_and_repairs_drift() {
    let (client, ns, reconciler) = one_reconciler("stk-mysql").await;
    let stack = create_stack(
        &client,
        &ns,
        "db",
        // Its data goes with it: every child, the Secret included, is the Stack's.
        json!({"choice": "mysql", "storage": "2Gi", "deletionPolicy": "Delete"}),
    )
    .await;

    until::<Stack>(&client, &ns, "db", "a status", |s| phase(s).is_some()).await;
    let sts: StatefulSet = Api::namespaced(client.clone(), &ns)
        .get("db")
        .await
        .expect("StatefulSet");
    assert!(controlled_by(&sts, &stack));
    let spec = sts.spec.clone().expect("spec");
    let container = &spec.template.spec.as_ref().expect("pod").containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("docker.io/library/mysql:8.4")
    );
    assert_eq!(spec.replicas, Some(1));
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    for name in ["db", "db-headless"] {
        assert!(
            controlled_by(&services.get(name).await.expect(name), &stack),
            "{name}"
        );
    }
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let secret = secrets
        .get("db-credentials")
        .await
        .expect("credentials Secret");
    assert!(controlled_by(&secret, &stack));

    // Ready because the StatefulSet controller made a Pod, the scheduler placed it on a
    // node and the node reports it Ready; its claim is bound and its Service has it.
    until::<Stack>(&client, &ns, "db", "status Ready", |s| ready_with(s, 1)).await;
    let pods = pods_of(&client, &ns, "db").await;
    let [pod] = pods.as_slice() else {
        panic!("one Pod, got {pods:?}")
    };
    let owner = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .expect("a controller");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("StatefulSet", "db")
    );
    assert!(
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|n| n.starts_with("kwok-node-")),
        "placed by the scheduler: {pod:?}"
    );
    until::<PersistentVolumeClaim>(&client, &ns, "data-db-0", "the claim bound", |c| {
        c.and_then(|c| c.status.as_ref())
            .and_then(|s| s.phase.as_deref())
            == Some("Bound")
    })
    .await;
    until_listed::<EndpointSlice>(
        &client,
        &ns,
        "kubernetes.io/service-name=db",
        "a ready endpoint behind Service db",
        |slices| {
            slices
                .iter()
                .flat_map(|s| &s.endpoints)
                .any(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
        },
    )
    .await;
    let ready: Stack = Api::namespaced(client.clone(), &ns)
        .get("db")
        .await
        .expect("Stack");
    let status = ready.status.expect("status");
    assert_eq!(status.credentials_secret.as_deref(), Some("db-credentials"));
    let endpoint = status.endpoint.expect("endpoint");
    assert_eq!((endpoint.service.as_str(), endpoint.port), ("db", 3306));
    assert!(
        endpoint.node_port.is_none(),
        "ClusterIP exposure by default: nothing opened on the nodes"
    );
    let text = serde_json::to_string(&status.conditions).expect("json");
    let password =
        String::from_utf8(secret.data.expect("data")["app-password"].0.clone()).expect("utf8");
    assert!(!text.contains(&password), "the password is never in status");

    // A spec change rolls out to the StatefulSet.
    edit_stack(&client, &ns, "db", json!({"replicas": 3})).await;
    until::<Stack>(&client, &ns, "db", "3 replicas ready", |s| ready_with(s, 3)).await;
    until_pods(&client, &ns, "db", 3).await;

    // Drift: a deleted child comes back, an edited one is put back.
    services
        .delete("db-headless", &DeleteParams::default())
        .await
        .expect("delete");
    until::<Service>(
        &client,
        &ns,
        "db-headless",
        "headless Service recreated",
        |s| s.is_some_and(|s| s.metadata.deletion_timestamp.is_none()),
    )
    .await;
    let sts_api: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    sts_api
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .expect("edit the child");
    until::<StatefulSet>(&client, &ns, "db", "replicas put back", |s| {
        s.and_then(|s| s.spec.as_ref()).and_then(|s| s.replicas) == Some(3)
    })
    .await;
    // The StatefulSet controller started Pods for the 7 and removes them again.
    until_pods(&client, &ns, "db", 3).await;
    until::<Stack>(&client, &ns, "db", "Ready again after drift", |s| {
        ready_with(s, 3)
    })
    .await;

    // A changed choice removes the old children and creates the new.
    edit_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "tomcat", "storage": null}),
    )
    .await;
    until::<Deployment>(&client, &ns, "db", "a Deployment", |d| d.is_some()).await;
    until::<StatefulSet>(&client, &ns, "db", "the StatefulSet removed", |s| {
        s.is_none()
    })
    .await;
    until::<Service>(
        &client,
        &ns,
        "db-headless",
        "the headless Service removed",
        |s| s.is_none(),
    )
    .await;
    until::<Secret>(&client, &ns, "db-credentials", "the Secret removed", |s| {
        s.is_none()
    })
    .await;
    until::<Stack>(&client, &ns, "db", "tomcat Ready", |s| ready_with(s, 3)).await;
    // The MySQL Pods went with their StatefulSet (garbage collector); Tomcat's run.
    until_pods(&client, &ns, "db", 3).await;
    for pod in pods_of(&client, &ns, "db").await {
        let owner = pod.metadata.owner_references.unwrap_or_default();
        assert_eq!(
            owner.first().map(|o| o.kind.as_str()),
            Some("ReplicaSet"),
            "only the Deployment's Pods are left"
        );
    }
    reconciler.shut_down().await;
}

#[tokio::test]
async fn tomcat_gets_a_deployment_and_an_unknown_version_is_degraded() {
    let (client, ns, reconciler) = one_reconciler("stk-tomcat").await;
    let stack = create_stack(
        &client,
        &ns,
        "web",
        json!({"choice": "tomcat", "exposure": "ClusterIP", "replicas": 2}),
    )
    .await;
    until::<Deployment>(&client, &ns, "web", "a Deployment", |d| d.is_some()).await;
    let d: Deployment = Api::namespaced(client.clone(), &ns)
        .get("web")
        .await
        .expect("Deployment");
    assert!(controlled_by(&d, &stack));
    let pod = d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .expect("pod");
    assert_eq!(
        pod.containers[0].image.as_deref(),
        Some("docker.io/library/tomcat:10.1")
    );
    assert!(
        pod.containers[0].readiness_probe.is_some() && pod.containers[0].liveness_probe.is_some()
    );
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    assert!(
        secrets
            .get_opt("web-credentials")
            .await
            .expect("get")
            .is_none()
    );
    until::<Stack>(&client, &ns, "web", "Ready", |s| ready_with(s, 2)).await;
    until_pods(&client, &ns, "web", 2).await;

    create_stack(
        &client,
        &ns,
        "old",
        json!({"choice": "tomcat", "version": "7.0"}),
    )
    .await;
    let version_problem = degraded(&client, &ns, "old").await;
    assert_eq!(version_problem.reason, "UnknownVersion");
    assert!(
        version_problem.message.contains("10.1"),
        "{}",
        version_problem.message
    );
    // A Stack never takes over an object of someone else's that has a child's name.
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let theirs: Service = serde_json::from_value(json!({
        "metadata": {"name": "taken"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "theirs"}}
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &theirs)
        .await
        .expect("their Service");
    create_stack(&client, &ns, "taken", json!({"choice": "tomcat"})).await;
    let conflict = degraded(&client, &ns, "taken").await;
    assert_eq!(conflict.reason, "NameConflict");
    let untouched = services.get("taken").await.expect("their Service");
    assert!(untouched.metadata.owner_references.is_none(), "not adopted");
    assert_eq!(
        untouched.spec.and_then(|s| s.selector).expect("selector")["app"],
        "theirs"
    );
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    assert!(
        deployments.get_opt("taken").await.expect("get").is_none(),
        "nothing applied"
    );

    // Resources beyond the catalog's ceiling are refused, not handed out.
    create_stack(
        &client,
        &ns,
        "greedy",
        json!({"choice": "tomcat", "resources": {"limits": {"memory": "512Gi"}}}),
    )
    .await;
    let ceiling = degraded(&client, &ns, "greedy").await;
    assert_eq!(ceiling.reason, "ResourcesRefused");
    assert!(ceiling.message.contains("8Gi"), "{}", ceiling.message);
    assert!(
        deployments.get_opt("greedy").await.expect("get").is_none(),
        "nothing applied"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_planted_volume_claim_is_never_adopted() {
    let (client, ns, reconciler) = one_reconciler("stk-claim").await;
    // Someone else's claim, under the name the StatefulSet's first replica would use.
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &ns);
    let planted: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data-db-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .expect("claim");
    claims
        .create(&PostParams::default(), &planted)
        .await
        .expect("their claim");
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    let conflict = degraded(&client, &ns, "db").await;
    assert_eq!(conflict.reason, "NameConflict");
    assert!(
        conflict.message.contains("PersistentVolumeClaim data-db-0"),
        "{}",
        conflict.message
    );
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    assert!(
        sets.get_opt("db").await.expect("get").is_none(),
        "no StatefulSet to adopt it"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_restarted_reconciler_leaves_no_duplicates_and_keeps_the_password() {
    let client = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&client, "stk-restart").await;
    let first = Instance::start(&client, &ns, "first");
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    until::<Stack>(&client, &ns, "db", "a status", |s| phase(s).is_some()).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let password = secrets
        .get("db-credentials")
        .await
        .expect("Secret")
        .data
        .expect("data")["app-password"]
        .clone();
    first.shut_down().await;

    let second = Instance::start(&client, &ns, "second");
    edit_stack(&client, &ns, "db", json!({"replicas": 2})).await;
    until::<StatefulSet>(&client, &ns, "db", "2 replicas", |s| {
        s.and_then(|s| s.spec.as_ref()).and_then(|s| s.replicas) == Some(2)
    })
    .await;
    let by_stack = ListParams::default().labels("portico.dev/stack=db");
    let statefulsets = Api::<StatefulSet>::namespaced(client.clone(), &ns);
    let services = Api::<Service>::namespaced(client.clone(), &ns);
    assert_eq!(
        statefulsets
            .list(&by_stack)
            .await
            .expect("list")
            .items
            .len(),
        1
    );
    assert_eq!(services.list(&by_stack).await.expect("list").items.len(), 2);
    assert_eq!(secrets.list(&by_stack).await.expect("list").items.len(), 1);
    let after = secrets
        .get("db-credentials")
        .await
        .expect("Secret")
        .data
        .expect("data")["app-password"]
        .clone();
    assert_eq!(after, password, "a restart does not change the password");
    assert!(second.reconciles() > 0);
    second.shut_down().await;
}

#[tokio::test]
async fn of_two_reconcilers_only_the_leader_acts_and_the_other_takes_over() {
    let client = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&client, "stk-leader").await;
    let a = Instance::start(&client, &ns, "replica-a");
    // Wait for A to lead before B starts, so that the roles are known.
    until::<k8s_openapi::api::coordination::v1::Lease>(
        &client,
        &ns,
        "portico-reconciler",
        "A leads",
        |l| {
            l.and_then(|l| l.spec.as_ref())
                .and_then(|s| s.holder_identity.as_deref())
                == Some("replica-a")
        },
    )
    .await;
    let b = Instance::start(&client, &ns, "replica-b");
    create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    until::<Stack>(&client, &ns, "web", "a status", |s| phase(s).is_some()).await;
    assert!(a.reconciles() > 0);
    assert_eq!(b.reconciles(), 0, "the follower never reconciles");

    a.shut_down().await;
    until::<k8s_openapi::api::coordination::v1::Lease>(
        &client,
        &ns,
        "portico-reconciler",
        "B leads",
        |l| {
            l.and_then(|l| l.spec.as_ref())
                .and_then(|s| s.holder_identity.as_deref())
                == Some("replica-b")
        },
    )
    .await;
    // A change only the new leader can carry out.
    edit_stack(&client, &ns, "web", json!({"replicas": 2})).await;
    until::<Stack>(&client, &ns, "web", "2 ready under B", |s| ready_with(s, 2)).await;
    assert!(b.reconciles() > 0);
    b.shut_down().await;
}

#[tokio::test]
async fn a_pod_that_fits_no_node_says_why_and_a_smaller_request_turns_ready() {
    let (client, ns, reconciler) = one_reconciler("stk-sched").await;
    // Within the catalog's ceiling (4 CPUs), beyond any node (2 CPUs each).
    create_stack(
        &client,
        &ns,
        "big",
        json!({"choice": "mysql", "resources": {"requests": {"cpu": "3"}}}),
    )
    .await;
    // The scheduler may first say the claim is not bound yet; the status follows its
    // latest words.
    until::<Stack>(&client, &ns, "big", "the scheduler's reason", |s| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Degraded" && c.message.contains("Insufficient cpu"))
        })
    })
    .await;
    let why = degraded(&client, &ns, "big").await;
    assert_eq!(why.reason, "Unschedulable");
    // The scheduler's own words, naming the Pod.
    assert!(
        why.message.starts_with("Pod big-0 cannot be placed: 0/")
            && why.message.contains("Insufficient cpu"),
        "{}",
        why.message
    );
    let pod: Pod = Api::namespaced(client.clone(), &ns)
        .get("big-0")
        .await
        .expect("Pod");
    let scheduled = pod
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "PodScheduled")
        .expect("PodScheduled");
    assert!(
        why.message
            .ends_with(scheduled.message.as_deref().unwrap_or("?")),
        "the Stack repeats the Pod's condition: {} vs {:?}",
        why.message,
        scheduled.message
    );
    // The Event people see on the Stack's page says so too.
    // Events of one reason fold into a series that keeps its first note, which may be
    // the scheduler's earlier words: the Pod and the scheduler's start are the same.
    // (Published just after the status: watched for, not read once.)
    until_listed::<k8s_openapi::api::core::v1::Event>(
        &client,
        &ns,
        "",
        "the Unschedulable Event on the Stack",
        |events| {
            events.iter().any(|e| {
                e.reason.as_deref() == Some("Unschedulable")
                    && e.involved_object.name.as_deref() == Some("big")
                    && e.message.as_deref().is_some_and(|m| {
                        m.starts_with("Pod big-0 cannot be placed: 0/3 nodes are available")
                    })
            })
        },
    )
    .await;

    edit_stack(
        &client,
        &ns,
        "big",
        json!({"resources": {"requests": {"cpu": "500m"}}}),
    )
    .await;
    until::<Stack>(&client, &ns, "big", "Ready once it fits", |s| {
        ready_with(s, 1)
    })
    .await;
    until_pods(&client, &ns, "big", 1).await;
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_child_replaced_under_the_same_name_is_put_back() {
    let (client, ns, reconciler) = one_reconciler("stk-replaced").await;
    let stack = create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    until::<Stack>(&client, &ns, "web", "Ready", |s| ready_with(s, 1)).await;
    // `kubectl replace --force` with another image, keeping the Stack as controller:
    // a new object (generation 1, like the one it replaces) under the same name.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let mut theirs = deployments.get("web").await.expect("Deployment");
    theirs.metadata = kube::api::ObjectMeta {
        name: theirs.metadata.name.clone(),
        labels: theirs.metadata.labels.clone(),
        owner_references: theirs.metadata.owner_references.clone(),
        ..Default::default()
    };
    theirs.status = None;
    let spec = theirs.spec.as_mut().expect("spec");
    spec.template.spec.as_mut().expect("pod").containers[0].image =
        Some("docker.io/example/not-tomcat:1".into());
    // Should the reconciler recreate it between the delete and the create (it waits
    // half a second first), the replacement is tried again.
    let mut replaced = false;
    for _ in 0..5 {
        deployments
            .delete("web", &DeleteParams::background())
            .await
            .expect("delete");
        until::<Deployment>(&client, &ns, "web", "the old one gone", |d| d.is_none()).await;
        match deployments.create(&PostParams::default(), &theirs).await {
            Ok(_) => {
                replaced = true;
                break;
            }
            Err(kube::Error::Api(status)) if status.code == 409 => continue,
            Err(e) => panic!("the replacement: {e}"),
        }
    }
    assert!(replaced, "the replacement went in");
    until::<Deployment>(&client, &ns, "web", "the catalog's image back", |d| {
        d.and_then(|d| d.spec.as_ref())
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.containers.first())
            .and_then(|c| c.image.as_deref())
            == Some("docker.io/library/tomcat:10.1")
    })
    .await;
    let now = deployments.get("web").await.expect("Deployment");
    assert!(controlled_by(&now, &stack));
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_change_the_api_server_refuses_keeps_what_the_children_report() {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let (client, ns, reconciler) = one_reconciler("stk-refused").await;
    create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    until::<Stack>(&client, &ns, "web", "Ready", |s| ready_with(s, 1)).await;
    // One Service is all the namespace may have: MySQL's second (headless) one is
    // refused by the API server's quota admission.
    let quota: ResourceQuota = serde_json::from_value(json!({
        "metadata": {"name": "one-service"}, "spec": {"hard": {"services": "1"}}
    }))
    .expect("quota");
    Api::<ResourceQuota>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &quota)
        .await
        .expect("quota");
    until::<ResourceQuota>(&client, &ns, "one-service", "the quota counted", |q| {
        q.and_then(|q| q.status.as_ref())
            .and_then(|s| s.used.as_ref())
            .is_some_and(|used| used.get("services").is_some_and(|n| n.0 == "1"))
    })
    .await;
    edit_stack(&client, &ns, "web", json!({"choice": "mysql"})).await;
    let refused = degraded(&client, &ns, "web").await;
    assert_eq!(refused.reason, "ReconcileFailed");
    assert!(
        refused.message.contains("exceeded quota"),
        "the API server's words: {}",
        refused.message
    );
    // The Tomcat children still run: their endpoint and counts stay in status.
    let stack: Stack = Api::namespaced(client.clone(), &ns)
        .get("web")
        .await
        .expect("Stack");
    let status = stack.status.expect("status");
    assert_eq!(
        status.endpoint.map(|e| (e.service, e.port)),
        Some(("web".to_string(), 8080))
    );
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    assert_eq!(ready.message, "1 of 1 replicas ready; see Degraded.");
    reconciler.shut_down().await;
}

/// Creates a MySQL Stack that does not keep its data, waits until it is Ready with its
/// Pod and claim, deletes it with `propagation` and waits until nothing it owned is left.
async fn deleting_removes_everything_it_owns(propagation: DeleteParams, label: &str) {
    let (client, ns, reconciler) = one_reconciler(label).await;
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "deletionPolicy": "Delete"}),
    )
    .await;
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    until::<PersistentVolumeClaim>(&client, &ns, "data-db-0", "the claim", |c| c.is_some()).await;

    let foreground =
        propagation.propagation_policy == Some(kube::api::PropagationPolicy::Foreground);
    Api::<Stack>::namespaced(client.clone(), &ns)
        .delete("db", &propagation)
        .await
        .expect("delete the Stack");
    if foreground {
        // The Stack stays, marked, until the garbage collector has removed its
        // dependents: what the UI shows as "deleting dependents first". Read at any
        // moment, it is either still there and marked, or already gone.
        let stack = Api::<Stack>::namespaced(client.clone(), &ns)
            .get_opt("db")
            .await
            .expect("get");
        if let Some(stack) = stack {
            assert!(
                stack
                    .metadata
                    .finalizers
                    .unwrap_or_default()
                    .contains(&"foregroundDeletion".to_string())
            );
        }
    }
    until::<Stack>(&client, &ns, "db", "the Stack gone", |s| s.is_none()).await;
    if foreground {
        // What foreground means, whatever the timing: once the Stack is gone, so is
        // every child that blocks its deletion (each names it so), already.
        let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
        let sts = statefulsets.get_opt("db").await.expect("get");
        assert!(sts.is_none(), "a StatefulSet outlived its Stack");
        let services: Api<Service> = Api::namespaced(client.clone(), &ns);
        for service in ["db", "db-headless"] {
            let found = services.get_opt(service).await.expect("get");
            assert!(found.is_none(), "Service {service} outlived its Stack");
        }
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
        let secret = secrets.get_opt("db-credentials").await.expect("get");
        assert!(secret.is_none(), "the Secret outlived its Stack");
    }
    until::<StatefulSet>(&client, &ns, "db", "the StatefulSet gone", |s| s.is_none()).await;
    for service in ["db", "db-headless"] {
        until::<Service>(&client, &ns, service, "a Service gone", |s| s.is_none()).await;
    }
    until::<Secret>(&client, &ns, "db-credentials", "the Secret gone", |s| {
        s.is_none()
    })
    .await;
    until::<PersistentVolumeClaim>(&client, &ns, "data-db-0", "the claim gone", |c| c.is_none())
        .await;
    until_listed::<Pod>(&client, &ns, "portico.dev/stack=db", "the Pods gone", |p| {
        p.is_empty()
    })
    .await;
    reconciler.shut_down().await;
}

#[tokio::test]
async fn deleting_a_stack_in_the_foreground_removes_everything_it_owns_first() {
    deleting_removes_everything_it_owns(DeleteParams::foreground(), "stk-del-fg").await;
}

#[tokio::test]
async fn deleting_a_stack_in_the_background_removes_everything_it_owns() {
    deleting_removes_everything_it_owns(DeleteParams::background(), "stk-del-bg").await;
}

#[tokio::test]
async fn a_stack_keeps_its_data_by_default_and_one_made_again_reattaches_it_when_asked() {
    let (client, ns, reconciler) = one_reconciler("stk-keep").await;
    let first = create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    assert_eq!(
        first.spec.deletion_policy,
        portico_server::reconcile::stack::DeletionPolicy::Retain,
        "the API server defaults it"
    );
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    until::<PersistentVolumeClaim>(&client, &ns, "data-db-0", "the claim", |c| c.is_some()).await;
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns)
        .get("data-db-0")
        .await
        .expect("claim");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let secret = secrets.get("db-credentials").await.expect("Secret");
    let password = portico_server::reconcile::desired::password_in(&secret);

    Api::<Stack>::namespaced(client.clone(), &ns)
        .delete("db", &DeleteParams::background())
        .await
        .expect("delete the Stack");
    until::<Stack>(&client, &ns, "db", "the Stack gone", |s| s.is_none()).await;
    until::<StatefulSet>(&client, &ns, "db", "the StatefulSet gone", |s| s.is_none()).await;
    until::<Service>(&client, &ns, "db", "its Service gone", |s| s.is_none()).await;
    // The claim and the password that opens it stay: the same objects, owned by none.
    let kept = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns)
        .get("data-db-0")
        .await
        .expect("the claim is kept");
    assert_eq!(kept.metadata.uid, claim.metadata.uid);
    assert!(
        kept.metadata
            .owner_references
            .unwrap_or_default()
            .is_empty()
    );
    let kept_secret = secrets
        .get("db-credentials")
        .await
        .expect("the Secret is kept");
    assert_eq!(kept_secret.metadata.uid, secret.metadata.uid);

    // The uid of the Stack it was kept from is on the kept Secret.
    assert_eq!(
        kept_secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(portico_server::reconcile::desired::KEPT_FROM_ANNOTATION)),
        first.metadata.uid.as_ref()
    );
    // Made again under the same name, asking for it: the kept claim and password are
    // its own.
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "reattachKeptData": true}),
    )
    .await;
    until::<Stack>(&client, &ns, "db", "Ready with the kept volume", |s| {
        ready_with(s, 1)
    })
    .await;
    let reattached = Api::<PersistentVolumeClaim>::namespaced(client.clone(), &ns)
        .get("data-db-0")
        .await
        .expect("claim");
    assert_eq!(
        reattached.metadata.uid, claim.metadata.uid,
        "the same volume"
    );
    let again = secrets.get("db-credentials").await.expect("Secret");
    assert_eq!(
        portico_server::reconcile::desired::password_in(&again),
        password,
        "the password that opens it"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn choice_postgres_is_rejected_by_the_api_server() {
    let client = crate::kit::admin_with_stack_crd().await;
    let api: Api<Stack> = Api::namespaced(client, "default");
    let stack: Stack = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
        "metadata": {"name": "pg"}, "spec": {"choice": "postgres"}
    }))
    .expect("stack");
    let err = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &stack,
        )
        .await
        .expect_err("postgres is not a choice");
    let kube::Error::Api(status) = err else {
        panic!("an API error, got {err:?}")
    };
    assert_eq!(status.code, 422);
    assert!(status.message.contains("spec.choice"), "{}", status.message);

    for bad in ["9shop", &"a".repeat(53)] {
        let stack: Stack = serde_json::from_value(json!({
            "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
            "metadata": {"name": bad}, "spec": {"choice": "tomcat"}
        }))
        .expect("stack");
        let err = api
            .create(
                &PostParams {
                    dry_run: true,
                    ..Default::default()
                },
                &stack,
            )
            .await
            .expect_err("a name its children could not use");
        assert!(err.to_string().contains("at most 52 characters"), "{err}");
    }
}

/// The value of the sample `series` (name and labels, as printed) in `text`.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

#[tokio::test]
async fn metrics_count_reconciles_by_outcome_and_the_reconcilers_api_requests() {
    let admin = crate::kit::admin_with_stack_crd().await;
    let ns = crate::kit::fresh_namespace(&admin, "stk-metrics").await;
    // The reconciler's client counts its requests, as `main` builds it.
    let kubeconfig = kube::config::Kubeconfig::read_from(
        portico_control_plane::cluster::TestCluster::shared().admin_kubeconfig(),
    )
    .expect("admin kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("admin configuration");
    let metrics = Arc::new(Metrics::new());
    let client = kube::client::ClientBuilder::try_from(config)
        .expect("client")
        .with_layer(&metrics.api_layer())
        .build();
    let reconciler = Instance::start_with(&client, &ns, "measured", metrics.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let url = format!("http://{}/metrics", listener.local_addr().expect("address"));
    let scraped = portico_server::web::metrics_route::Scraped {
        reconciler: metrics,
        live: None,
    };
    let router = portico_server::web::metrics_route::router(scraped);
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let scrape = || async {
        let response = reqwest::get(&url).await.expect("scrape");
        assert!(response.status().is_success());
        assert_eq!(
            response.headers()["content-type"],
            metrics::CONTENT_TYPE,
            "OpenMetrics text"
        );
        response.text().await.expect("metrics text")
    };

    create_stack(&admin, &ns, "web", json!({"choice": "tomcat"})).await;
    until::<Stack>(&admin, &ns, "web", "Ready", |s| ready_with(s, 1)).await;
    create_stack(
        &admin,
        &ns,
        "old",
        json!({"choice": "tomcat", "version": "7.0"}),
    )
    .await;
    degraded(&admin, &ns, "old").await;

    let text = scrape().await;
    assert_eq!(sample(&text, "portico_reconciler_leader"), 1.0);
    assert!(sample(&text, "portico_reconcile_total{outcome=\"applied\"}") >= 1.0);
    assert!(
        sample(
            &text,
            "portico_reconcile_duration_seconds_count{outcome=\"applied\"}"
        ) >= 1.0
    );
    assert!(
        sample(
            &text,
            "portico_reconcile_blocked_total{reason=\"UnknownVersion\"}"
        ) >= 1.0
    );
    assert_eq!(
        sample(
            &text,
            "portico_reconcile_failures_total{reason=\"Conflict\"}"
        ),
        0.0
    );
    // The Stack's children were applied (created: 201), its status patched, its watches
    // opened: every request by verb, resource and the API server's answer.
    for series in [
        "portico_reconciler_api_requests_total{verb=\"APPLY\",resource=\"deployments.apps\",code=\"201\"}",
        "portico_reconciler_api_requests_total{verb=\"APPLY\",resource=\"services\",code=\"201\"}",
        "portico_reconciler_api_requests_total{verb=\"PATCH\",resource=\"stacks.portico.dev/status\",code=\"200\"}",
        "portico_reconciler_api_requests_total{verb=\"WATCH\",resource=\"deployments.apps\",code=\"200\"}",
    ] {
        assert!(sample(&text, series) >= 1.0, "{series}");
    }
    assert_eq!(
        sample(&text, "portico_stacks_pending"),
        0.0,
        "nothing waits"
    );

    reconciler.shut_down().await;
    let text = scrape().await;
    assert_eq!(
        sample(&text, "portico_reconciler_leader"),
        0.0,
        "stepped down"
    );
    server.abort();
}

#[tokio::test]
async fn children_whose_stack_label_is_removed_are_labelled_again_and_the_password_is_kept() {
    let (client, ns, reconciler) = one_reconciler("stk-unlabel").await;
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let password = |secret: Secret| secret.data.expect("data")["app-password"].clone();
    let before = password(secrets.get("db-credentials").await.expect("Secret"));

    // Out of the labelled watches, still the Stack's (its ownerReference is intact).
    let unlabel = Patch::Merge(json!({"metadata": {"labels": {"portico.dev/stack": null}}}));
    secrets
        .patch("db-credentials", &PatchParams::default(), &unlabel)
        .await
        .expect("unlabel the Secret");
    Api::<StatefulSet>::namespaced(client.clone(), &ns)
        .patch("db", &PatchParams::default(), &unlabel)
        .await
        .expect("unlabel the StatefulSet");

    let labelled = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        meta.labels
            .as_ref()
            .and_then(|l| l.get("portico.dev/stack"))
            == Some(&"db".to_string())
    };
    until::<StatefulSet>(&client, &ns, "db", "labelled again", |s| {
        s.is_some_and(|s| labelled(&s.metadata))
    })
    .await;
    // The Secret is never read or rewritten (the reconciler may only create one):
    // the database keeps its first password, and so does the Secret.
    let after = secrets.get("db-credentials").await.expect("Secret");
    assert!(!labelled(&after.metadata), "left as the person changed it");
    assert_eq!(password(after), before);
    // Its own claim did not make the StatefulSet look like someone else's.
    until::<Stack>(&client, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    let stack: Stack = Api::namespaced(client.clone(), &ns)
        .get("db")
        .await
        .expect("Stack");
    let degraded = stack
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == "Degraded")
        .expect("Degraded");
    assert_eq!(degraded.status, "False", "{}", degraded.message);
    reconciler.shut_down().await;
}

/// The attack on kept data (`scripts/attack.sh`): Mallory may create and delete Stacks
/// but not claims. A Stack made again under a deleted one's name with
/// `deletionPolicy: Delete` and `reattachKeptData` would take the kept claim, and its
/// deletion remove it: refused at admission with a sentence. Without asking, the new
/// Stack leaves the claim alone and says why; deleting it leaves the data there.
#[tokio::test]
async fn attack_someone_who_may_not_delete_claims_cannot_take_over_and_wipe_kept_data() {
    let (admin, ns, reconciler) = one_reconciler("stk-wipe").await;
    // Only the reattach policy: the shared cluster's other Stack tests make Stacks the
    // ceilings would refuse, to see the reconciler refuse them.
    let policies: Vec<_> = portico_control_plane::apply::read_documents(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/base/stack-policy.yaml"),
    )
    .expect("policies")
    .into_iter()
    .filter(|d| d.metadata.name.as_deref() == Some("portico-stack-reattach"))
    .collect();
    assert_eq!(policies.len(), 2, "the policy and its binding");
    portico_control_plane::apply::apply_all(&admin, policies)
        .await
        .expect("policies apply");
    create_stack(&admin, &ns, "db", json!({"choice": "mysql"})).await;
    until::<Stack>(&admin, &ns, "db", "Ready", |s| ready_with(s, 1)).await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(admin.clone(), &ns);
    until::<PersistentVolumeClaim>(&admin, &ns, "data-db-0", "the claim", |c| c.is_some()).await;
    let kept_uid = claims.get("data-db-0").await.expect("claim").metadata.uid;
    Api::<Stack>::namespaced(admin.clone(), &ns)
        .delete("db", &DeleteParams::background())
        .await
        .expect("delete the Stack");
    until::<Stack>(&admin, &ns, "db", "the Stack gone", |s| s.is_none()).await;
    until::<StatefulSet>(&admin, &ns, "db", "the StatefulSet gone", |s| s.is_none()).await;

    let token = crate::kit::account_token(&admin, &ns, "mallory").await;
    crate::kit::grant(
        &admin,
        &ns,
        "stack-editor",
        ("portico.dev", "stacks"),
        &[
            "get", "list", "watch", "create", "update", "patch", "delete",
        ],
        "mallory",
    )
    .await;
    let mallory: Api<Stack> = Api::namespaced(crate::kit::client_with_token(token).await, &ns);
    let stack = |spec: serde_json::Value| -> Stack {
        serde_json::from_value(
            json!({"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
            "metadata": {"name": "db"}, "spec": spec}),
        )
        .expect("stack")
    };
    let taking =
        stack(json!({"choice": "mysql", "deletionPolicy": "Delete", "reattachKeptData": true}));
    // The policy takes a moment to load: dry runs until it answers.
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while mallory.create(&dry_run, &taking).await.is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    match mallory.create(&PostParams::default(), &taking).await {
        Err(kube::Error::Api(status)) => assert!(
            status.code == 403
                && status.message.contains(&format!(
                    "it needs permission to delete persistentvolumeclaims in namespace {ns}"
                )),
            "{}",
            status.message
        ),
        other => panic!("taking the kept data was admitted: {other:?}"),
    }
    // Not asking: the Stack is made, leaves the claim alone and says why.
    mallory
        .create(
            &PostParams::default(),
            &stack(json!({"choice": "mysql", "deletionPolicy": "Delete"})),
        )
        .await
        .expect("a Stack that does not ask for the kept data");
    let blocked = degraded(&admin, &ns, "db").await;
    assert_eq!(blocked.reason, "KeptData", "{}", blocked.message);
    assert!(
        blocked.message.contains("set reattachKeptData"),
        "{}",
        blocked.message
    );
    mallory
        .delete("db", &DeleteParams::background())
        .await
        .expect("Mallory deletes her Stack");
    until::<Stack>(&admin, &ns, "db", "the Stack gone", |s| s.is_none()).await;
    let still = claims
        .get("data-db-0")
        .await
        .expect("the kept claim is still there");
    assert_eq!(
        still.metadata.uid, kept_uid,
        "the same volume, its data kept"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_secret_from_before_app_users_keeps_roots_password_and_gains_the_users() {
    let (client, ns, reconciler) = one_reconciler("stk-legacy").await;
    // As an older Portico left it: one password (root's), under key password.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    let old: Secret = serde_json::from_value(json!({
        "metadata": {"name": "db-credentials", "labels": {"portico.dev/stack": "db"}},
        "type": "Opaque", "stringData": {"password": "roots-own"}}))
    .expect("secret");
    secrets
        .create(&PostParams::default(), &old)
        .await
        .expect("an old Secret");
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    until::<Secret>(&client, &ns, "db-credentials", "the keys moved", |s| {
        s.and_then(|s| s.data.as_ref())
            .is_some_and(|d| !d.contains_key("password"))
    })
    .await;
    let moved = secrets
        .get("db-credentials")
        .await
        .expect("Secret")
        .data
        .expect("data");
    let text = |key: &str| String::from_utf8(moved[key].0.clone()).expect("utf8");
    assert_eq!(
        text("admin-password"),
        "roots-own",
        "root keeps its password"
    );
    assert_eq!(text("app-password").len(), 24, "the app user gets its own");
    // The server reads each under its name; a binding would hand the app user's.
    until::<StatefulSet>(&client, &ns, "db", "the StatefulSet", |s| s.is_some()).await;
    let sts: StatefulSet = Api::namespaced(client.clone(), &ns)
        .get("db")
        .await
        .expect("StatefulSet");
    let env = sts
        .spec
        .and_then(|s| s.template.spec)
        .map(|p| p.containers[0].env.clone().unwrap_or_default())
        .expect("env");
    let key = |name: &str| {
        env.iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value_from.as_ref()?.secret_key_ref.as_ref())
            .map(|r| r.key.clone())
    };
    assert_eq!(
        key("MYSQL_ROOT_PASSWORD").as_deref(),
        Some("admin-password")
    );
    assert_eq!(key("MYSQL_PASSWORD").as_deref(), Some("app-password"));
    // Moved once: later reconciles leave both as they are.
    edit_stack(&client, &ns, "db", json!({"replicas": 2})).await;
    until::<StatefulSet>(&client, &ns, "db", "2 replicas", |s| {
        s.and_then(|s| s.spec.as_ref()).and_then(|s| s.replicas) == Some(2)
    })
    .await;
    let again = secrets.get("db-credentials").await.expect("Secret");
    assert_eq!(again.data.as_ref(), Some(&moved));
    reconciler.shut_down().await;
}
