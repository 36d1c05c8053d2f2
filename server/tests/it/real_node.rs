//! What a person provisions really runs: Stacks on the local cluster's real node
//! (kubelet, containerd, runc, kube-proxy, CoreDNS), from the local catalog's images
//! built on this machine (`deploy/overlays/local/stacks.yaml`). A Stack is Ready only when
//! its container's real readiness probe passes; the credentials it shows open the
//! database through its Service; the data survives the Pod.
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::kit::stacks::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Pod, Secret, Service};
use kube::api::{Api, DeleteParams, LogParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use portico_control_plane::cluster::TestCluster;
use portico_server::reconcile::catalog::Catalog;
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// Real containers start, initialise a database and pass probes that run every 10 s.
const REAL_WAIT: Duration = Duration::from_secs(240);

async fn admin() -> kube::Client {
    crate::kit::admin_with_stack_crd_on(TestCluster::shared_real()).await
}

fn local_catalog_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/overlays/local/stacks.yaml")
}

fn local_catalog() -> Catalog {
    Catalog::load(Some(&local_catalog_path())).expect("the local catalog")
}

fn reconciler(client: &kube::Client, ns: &str) -> Instance {
    Instance::start_with_catalog(client, ns, "real-node", Arc::default(), local_catalog())
}

async fn ready_stack(client: &kube::Client, ns: &str, name: &str, replicas: i32) -> Stack {
    until_within::<Stack>(client, ns, name, "Ready on the real node", REAL_WAIT, |s| {
        ready_with(s, replicas)
    })
    .await;
    Api::<Stack>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("Stack")
}

/// The one Pod of Stack `name`, checked to be a real container that runs and is ready.
async fn running_pod(client: &kube::Client, ns: &str, name: &str) -> Pod {
    let pods = pods_of(client, ns, name).await;
    let live: Vec<&Pod> = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect();
    let [pod] = live.as_slice() else {
        panic!("one Pod of {name}, got {pods:?}")
    };
    let status = pod.status.as_ref().expect("Pod status");
    let container = &status.container_statuses.as_ref().expect("containers")[0];
    assert!(
        container
            .container_id
            .as_deref()
            .is_some_and(|id| id.starts_with("containerd://")),
        "a container of the real runtime: {container:?}"
    );
    assert!(container.ready, "ready by its probe: {container:?}");
    (*pod).clone()
}

/// The NodePort address of the Stack's Service, as the test process reaches it: the
/// address of the node its Pod runs on.
fn node_address(pod: &Pod, stack: &Stack) -> (String, i32) {
    let host = pod
        .status
        .as_ref()
        .and_then(|s| s.host_ip.clone())
        .expect("the Pod's node address");
    let port = stack
        .status
        .as_ref()
        .and_then(|s| s.endpoint.as_ref())
        .and_then(|e| e.node_port)
        .expect("a NodePort in the Stack's endpoint");
    (host, port)
}

/// Waits until the Service `name` sends to `pod` (its EndpointSlice lists the Pod's
/// address as ready), then until kube-proxy on the node has caught up: its rules are
/// written after the slice changes, with no event to wait on, so the Service's port
/// is tried until the app user logs in through it (at most 30 s).
async fn served_by(client: &kube::Client, ns: &str, (name, password): (&str, &str), pod: &Pod) {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .expect("the Pod's address");
    until_listed::<EndpointSlice>(
        client,
        ns,
        &format!("kubernetes.io/service-name={name}"),
        "the Service's endpoints list the new Pod",
        |slices| {
            slices.iter().flat_map(|s| &s.endpoints).any(|e| {
                e.addresses.contains(&ip)
                    && e.conditions.as_ref().and_then(|c| c.ready) == Some(true)
            })
        },
    )
    .await;
    let service = Api::<Service>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("Service");
    let (host, port) = (
        pod.status
            .as_ref()
            .and_then(|s| s.host_ip.clone())
            .expect("node address"),
        service
            .spec
            .and_then(|s| s.ports)
            .and_then(|p| p.first()?.node_port)
            .expect("a NodePort"),
    );
    // A login, not a bare connect: that would leave "Aborted connection" in the
    // server's log, which the probes are checked never to.
    first_answer(&format!("{host}:{port}"), || {
        sql_answer(("app", password), (&host, port), "SELECT 1")
    })
    .await;
}

/// The first answer `ask` gets, asked again while it fails (at most 30 s). A Service's
/// NodePort is opened by kube-proxy after the Service and its endpoints are stored,
/// with no event to wait on, so a refused connection only means "not yet".
async fn first_answer<T, E: std::fmt::Display, F: std::future::Future<Output = Result<T, E>>>(
    what: &str,
    mut ask: impl FnMut() -> F,
) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match ask().await {
            Ok(answer) => return answer,
            Err(error) => assert!(Instant::now() < deadline, "{what} never answered: {error}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs SQL with Debian's `mariadb` client as the app user the Stack shows; the
/// password goes by environment (never on a command line). Returns stdout, trimmed.
async fn sql(host: &str, port: i32, password: &str, statement: &str) -> String {
    match sql_answer(("app", password), (host, port), statement).await {
        Ok(out) => out,
        Err(error) => panic!("{statement}: {error}"),
    }
}

/// As [`sql`], as `user`: stdout, or what the client printed on failing.
async fn sql_answer(
    (user, password): (&str, &str),
    (host, port): (&str, i32),
    statement: &str,
) -> Result<String, String> {
    let out = tokio::process::Command::new("mariadb")
        .args(["-h", host, "-P", &port.to_string(), "-u", user])
        .args([
            "--batch",
            "--skip-column-names",
            "--connect-timeout=10",
            "-e",
        ])
        .arg(statement)
        .env("MYSQL_PWD", password)
        .output()
        .await
        .expect("the mariadb client runs (install.sh --for-tests installs it)");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// One of the server's status variables (`SHOW GLOBAL STATUS`), as the app user.
async fn server_status(host: &str, port: i32, password: &str, name: &str) -> u64 {
    let row = sql(
        host,
        port,
        password,
        &format!("SHOW GLOBAL STATUS LIKE '{name}'"),
    )
    .await;
    row.split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("status {name}: {row:?}"))
}

/// The app user's password, from the Stack's credentials Secret.
async fn password(client: &kube::Client, ns: &str, stack: &Stack) -> String {
    credential(client, ns, stack, "app-password").await
}

async fn credential(client: &kube::Client, ns: &str, stack: &Stack, key: &str) -> String {
    let name = stack
        .status
        .as_ref()
        .and_then(|s| s.credentials_secret.clone())
        .expect("the Stack names its credentials Secret");
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .get(&name)
        .await
        .expect("credentials Secret");
    let bytes = &secret.data.expect("data")[key].0;
    String::from_utf8(bytes.clone()).expect("a text password")
}

/// Runs a client Pod (the MariaDB image's `mariadb`) that reads through the Stack's
/// Service by its DNS name, with the password from the Stack's Secret; returns what
/// it printed (read through the API server from kubelet, as `kubectl logs` does).
async fn query_from_a_pod(client: &kube::Client, ns: &str, stack: &str, statement: &str) -> String {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"generateName": "client-"},
        "spec": {
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "containers": [{
                "name": "client",
                "image": "portico.local/mariadb:10.11",
                "command": ["mariadb", "-h", format!("{stack}.{ns}.svc"), "-P", "3306", "-u", "app",
                            "--batch", "--skip-column-names", "--connect-timeout=10", "-e", statement],
                "env": [{"name": "MYSQL_PWD", "valueFrom": {"secretKeyRef": {
                    "name": format!("{stack}-credentials"), "key": "app-password"}}}],
                "securityContext": {"runAsUser": 999, "runAsNonRoot": true,
                    "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
            }],
        },
    }))
    .expect("client Pod");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let name = pods
        .create(&PostParams::default(), &pod)
        .await
        .expect("create the client Pod")
        .metadata
        .name
        .expect("generated name");
    let finished = |p: Option<&Pod>| {
        matches!(
            p.and_then(|p| p.status.as_ref()?.phase.as_deref()),
            Some("Succeeded" | "Failed")
        )
    };
    tokio::time::timeout(REAL_WAIT, await_condition(pods.clone(), &name, finished))
        .await
        .expect("the client Pod finishes")
        .expect("watching the client Pod");
    let logs = pods
        .logs(&name, &LogParams::default())
        .await
        .expect("the client's log through the API server");
    let phase = pods.get(&name).await.expect("client Pod").status;
    assert_eq!(
        phase.and_then(|s| s.phase).as_deref(),
        Some("Succeeded"),
        "the client Pod failed: {logs}"
    );
    logs.trim().to_string()
}

#[tokio::test]
async fn mysql_runs_answers_with_the_credentials_it_shows_and_keeps_its_data_past_the_stack() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-mysql").await;
    let reconciler = reconciler(&client, &ns);
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "exposure": "NodePort"}),
    )
    .await;
    let stack = ready_stack(&client, &ns, "db", 1).await;
    let pod = running_pod(&client, &ns, "db").await;
    let (host, port) = node_address(&pod, &stack);
    let password = password(&client, &ns, &stack).await;
    // Ready says the Pod answers; kube-proxy may not route the NodePort to it yet.
    served_by(&client, &ns, ("db", &password), &pod).await;

    // From the test process, through the Service's NodePort on the node (kube-proxy).
    let row = "written through the NodePort";
    sql(
        &host,
        port,
        &password,
        &format!("CREATE TABLE app.notes (v VARCHAR(64)); INSERT INTO app.notes VALUES ('{row}')"),
    )
    .await;
    assert_eq!(
        sql(&host, port, &password, "SELECT v FROM app.notes").await,
        row
    );
    // A wrong password is refused: the credentials are the ones that count.
    let refused = tokio::process::Command::new("mariadb")
        .args([
            "-h",
            &host,
            "-P",
            &port.to_string(),
            "-u",
            "app",
            "-e",
            "SELECT 1",
        ])
        .env("MYSQL_PWD", "not-the-password")
        .output()
        .await
        .expect("mariadb");
    assert!(!refused.status.success(), "a wrong password gets in");
    // The app's user has rights on its own database only: not root.
    for (what, statement) in [
        ("read the server's users", "SELECT user FROM mysql.user"),
        ("make another database", "CREATE DATABASE other"),
        ("hand out rights", "GRANT ALL ON *.* TO app@'%'"),
    ] {
        let error = sql_answer(("app", &password), (&host, port), statement)
            .await
            .expect_err(what);
        assert!(error.contains("denied"), "{what}: {error}");
    }

    // From another Pod, by the Service's DNS name (CoreDNS) and ClusterIP.
    assert_eq!(
        query_from_a_pod(&client, &ns, "db", "SELECT v FROM app.notes").await,
        row
    );

    // A server whose data has no app user (a Stack made before Stacks had one) gets it
    // when it starts: dropped here by root (whose password is kept apart), it is back
    // once the Pod is.
    let root = credential(&client, &ns, &stack, "admin-password").await;
    assert_ne!(root, password, "root's password is not the app's");
    sql_answer(("root", &root), (&host, port), "DROP USER app@'%'")
        .await
        .expect("root drops the app's user");

    // The Pod goes; the StatefulSet brings it back on the same claim; the row stays.
    let old_uid = pod.metadata.uid.clone();
    Api::<Pod>::namespaced(client.clone(), &ns)
        .delete("db-0", &DeleteParams::default())
        .await
        .expect("delete the MySQL Pod");
    until_within::<Pod>(&client, &ns, "db-0", "a new db-0, ready", REAL_WAIT, |p| {
        p.is_some_and(|p| {
            p.metadata.uid != old_uid
                && p.status
                    .as_ref()
                    .and_then(|s| s.container_statuses.as_ref())
                    .is_some_and(|c| c.iter().all(|c| c.ready))
        })
    })
    .await;
    let pod = running_pod(&client, &ns, "db").await;
    served_by(&client, &ns, ("db", &password), &pod).await;
    assert_eq!(
        sql(&host, port, &password, "SELECT v FROM app.notes").await,
        row,
        "the row survives the Pod"
    );

    // A minute of probes (both log in as the app's user) leaves the new server's log
    // clean: no failed login, no connection dropped before logging in.
    let deadline = Instant::now() + REAL_WAIT;
    while server_status(&host, port, &password, "Uptime").await < 70 {
        assert!(Instant::now() < deadline, "the server never ran a minute");
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    for counter in ["Access_denied_errors", "Aborted_connects"] {
        assert_eq!(
            server_status(&host, port, &password, counter).await,
            0,
            "{counter} after a minute of probes"
        );
    }
    let log = Api::<Pod>::namespaced(client.clone(), &ns)
        .logs("db-0", &LogParams::default())
        .await
        .expect("the server's log");
    for noise in ["Access denied", "Aborted connection"] {
        assert!(!log.contains(noise), "{noise} in the server's log:\n{log}");
    }

    // The Stack goes (deletionPolicy Retain, the default): its volume and the password
    // that opens it stay. Made again under the same name, asking for them, it runs on
    // them: the row is there, and the kept password opens it.
    Api::<Stack>::namespaced(client.clone(), &ns)
        .delete("db", &DeleteParams::background())
        .await
        .expect("delete the Stack");
    until_listed::<Pod>(&client, &ns, "portico.dev/stack=db", "its Pod gone", |p| {
        p.is_empty()
    })
    .await;
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "reattachKeptData": true}),
    )
    .await;
    ready_stack(&client, &ns, "db", 1).await;
    assert_eq!(
        query_from_a_pod(&client, &ns, "db", "SELECT v FROM app.notes").await,
        row,
        "the row survives the Stack, on its kept volume"
    );
    reconciler.shut_down().await;
}

/// The last line of any live Pod labelled `app=NAME` that starts with `marker`, once
/// one has printed it (its log read through the API server, as `kubectl logs` does).
async fn printed_by(client: &kube::Client, ns: &str, app: &str, marker: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + REAL_WAIT;
    loop {
        let list = pods
            .list(&kube::api::ListParams::default().labels(&format!("app={app}")))
            .await
            .expect("list Pods");
        for pod in list
            .items
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
        {
            let name = pod.metadata.name.clone().unwrap_or_default();
            if let Ok(log) = pods.logs(&name, &LogParams::default()).await
                && let Some(line) = log.lines().rev().find(|l| l.starts_with(marker))
            {
                return line.to_string();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no Pod of {app} printed {marker:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test]
async fn a_bound_client_connects_with_only_its_environment_and_unbinding_takes_it_away() {
    use k8s_openapi::api::apps::v1::Deployment;
    use portico_server::reconcile::binding::kind::StackBinding;
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-bind").await;
    let reconciler = reconciler(&client, &ns);
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    let stack = ready_stack(&client, &ns, "db", 1).await;
    let password = password(&client, &ns, &stack).await;

    // Someone's own client: it knows nothing of the database but the variables a
    // binding gives it, and asks until it gets an answer.
    let script = r#"echo "url:$MYSQL_URL"
until MYSQL_PWD="$MYSQL_PASSWORD" mariadb -h "$MYSQL_HOST" -P "$MYSQL_PORT" -u "$MYSQL_USERNAME" \
  --batch --skip-column-names --connect-timeout=5 -e "SELECT CONCAT('answer:', DATABASE(), ':', 40 + 2)" "$MYSQL_DATABASE"
do sleep 2; done
exec sleep 100000"#;
    let deployment: Deployment = serde_json::from_value(json!({
        // Accepting a binding's MYSQL_ variables, as the Bind button has it do.
        "metadata": {"name": "app", "annotations": {"portico.dev/binding-prefixes": "MYSQL_"}},
        "spec": {
            "selector": {"matchLabels": {"app": "app"}},
            "template": {
                "metadata": {"labels": {"app": "app"}},
                "spec": {
                    "automountServiceAccountToken": false,
                    "terminationGracePeriodSeconds": 1,
                    "containers": [{
                        "name": "client",
                        "image": "portico.local/mariadb:10.11",
                        "command": ["sh", "-c", script],
                        "securityContext": {"runAsUser": 999, "runAsNonRoot": true,
                            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}},
                    }],
                },
            },
        },
    }))
    .expect("client Deployment");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    deployments
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create the client");
    let binding: StackBinding = serde_json::from_value(json!({
        "apiVersion": "portico.dev/v1alpha1", "kind": "StackBinding",
        "metadata": {"name": "app-db"},
        "spec": {"stack": "db", "workload": {"kind": "Deployment", "name": "app"}},
    }))
    .expect("binding");
    let bindings: Api<StackBinding> = Api::namespaced(client.clone(), &ns);
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .expect("bind");

    // The Deployment rolls; its new Pod connects with what the binding gave it, and the
    // URL the kubelet put together carries the Stack's password.
    assert_eq!(
        printed_by(&client, &ns, "app", "answer:").await,
        "answer:app:42"
    );
    assert_eq!(
        printed_by(&client, &ns, "app", "url:mysql").await,
        format!("url:mysql://app:{password}@db.{ns}.svc:3306/app"),
        "the app user's, never root's"
    );

    // Unbound: the variables leave the Pod template, and the Pods that run now have none.
    bindings
        .delete("app-db", &DeleteParams::default())
        .await
        .expect("unbind");
    until::<StackBinding>(&client, &ns, "app-db", "the binding gone", |b| b.is_none()).await;
    let unbound = |pod: &Pod| {
        pod.spec.as_ref().is_some_and(|s| {
            s.containers.iter().all(|c| {
                c.env
                    .as_ref()
                    .is_none_or(|env| env.iter().all(|e| !e.name.starts_with("MYSQL_")))
            })
        })
    };
    until_listed::<Pod>(
        &client,
        &ns,
        "app=app",
        "only Pods without the variables",
        |pods| !pods.is_empty() && pods.iter().all(|p| unbound(p)),
    )
    .await;
    assert_eq!(printed_by(&client, &ns, "app", "url:").await, "url:");
    reconciler.shut_down().await;
}

#[tokio::test]
async fn tomcat_answers_http_and_drift_is_put_back_with_real_pods() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-tomcat").await;
    let reconciler = reconciler(&client, &ns);
    create_stack(
        &client,
        &ns,
        "web",
        json!({"choice": "tomcat", "exposure": "NodePort"}),
    )
    .await;
    let stack = ready_stack(&client, &ns, "web", 1).await;
    let pod = running_pod(&client, &ns, "web").await;
    let (host, port) = node_address(&pod, &stack);
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let url = format!("http://{host}:{port}/");
    let answer = first_answer(&url, || http.get(&url).send()).await;
    assert_eq!(answer.status(), 200, "{url}");

    // Seed 003's drift, with real Pods: the Service deleted by hand comes back, and a
    // workload scaled to zero by hand runs its replica again and turns Ready.
    let services: Api<Service> = Api::namespaced(client.clone(), &ns);
    let old_service = services.get("web").await.expect("Service").metadata.uid;
    services
        .delete("web", &DeleteParams::default())
        .await
        .expect("delete the Service");
    until::<Service>(&client, &ns, "web", "the Service put back", |s| {
        s.is_some_and(|s| s.metadata.uid != old_service)
    })
    .await;
    Api::<Deployment>::namespaced(client.clone(), &ns)
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 0}})),
        )
        .await
        .expect("scale to zero by hand");
    until_within::<Deployment>(
        &client,
        &ns,
        "web",
        "a replica running again",
        REAL_WAIT,
        |d| {
            d.is_some_and(|d| {
                let observed = d.status.as_ref().and_then(|s| s.observed_generation);
                d.spec.as_ref().and_then(|s| s.replicas) == Some(1)
                    && observed >= d.metadata.generation
                    && d.status.as_ref().and_then(|s| s.ready_replicas) == Some(1)
            })
        },
    )
    .await;
    ready_stack(&client, &ns, "web", 1).await;
    let node_port = services
        .get("web")
        .await
        .expect("Service")
        .spec
        .and_then(|s| s.ports)
        .and_then(|p| p.first()?.node_port)
        .expect("the new Service's NodePort");
    let url = format!("http://{host}:{node_port}/");
    let answer = first_answer(&url, || http.get(&url).send()).await;
    assert_eq!(answer.status(), 200, "{url}");
    reconciler.shut_down().await;
}

/// The local catalog with `edit` applied to its YAML (a version whose image does not
/// exist, an entry misconfigured): what a platform team's mistake looks like.
fn catalog_with(edit: impl Fn(&mut serde_yaml::Value)) -> Catalog {
    let text = std::fs::read_to_string(local_catalog_path()).expect("catalog");
    let mut yaml: serde_yaml::Value = serde_yaml::from_str(&text).expect("YAML");
    edit(&mut yaml);
    Catalog::parse(&serde_yaml::to_string(&yaml).expect("YAML")).expect("catalog")
}

/// Waits until Stack `name` is Degraded for `reason`; returns the message, checked to
/// be told as a Warning Event on the Stack too.
async fn degraded_for(client: &kube::Client, ns: &str, name: &str, reason: &str) -> String {
    until_within::<Stack>(client, ns, name, reason, REAL_WAIT, |s| {
        s.and_then(|s| s.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Degraded" && c.status == "True" && c.reason == reason)
        })
    })
    .await;
    let stack = Api::<Stack>::namespaced(client.clone(), ns)
        .get(name)
        .await
        .expect("Stack");
    let condition = stack
        .status
        .expect("status")
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Degraded")
        .expect("Degraded");
    // The Event is recorded just after the status is written: wait for it too.
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(client.clone(), ns);
    let said = |list: &[k8s_openapi::api::events::v1::Event]| {
        list.iter().any(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.note.as_deref() == Some(condition.message.as_str())
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let list = events
            .list(&kube::api::ListParams::default())
            .await
            .expect("Events")
            .items;
        if said(&list) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "a Warning Event says it: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    condition.message
}

#[tokio::test]
async fn an_image_that_cannot_be_pulled_is_said_in_plain_words() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-pull").await;
    let catalog = catalog_with(|yaml| {
        yaml["mysql"]["versions"]["9.9"] = "portico.local/mariadb:9.9-not-built".into();
    });
    let reconciler =
        Instance::start_with_catalog(&client, &ns, "real-node", Arc::default(), catalog);
    create_stack(
        &client,
        &ns,
        "db",
        json!({"choice": "mysql", "version": "9.9"}),
    )
    .await;
    let message = degraded_for(&client, &ns, "db", "ImageUnavailable").await;
    assert!(
        message.starts_with(
            "Pod db-0 cannot start: the image portico.local/mariadb:9.9-not-built cannot be pulled ("
        ),
        "{message}"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_container_that_exits_gives_its_code_and_the_end_of_its_log() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-crash").await;
    // An entry that forgets the password variable: the image refuses to start.
    let catalog = catalog_with(|yaml| {
        if let Some(entry) = yaml["mysql"].as_mapping_mut() {
            entry.remove("passwordEnv");
        }
    });
    let reconciler =
        Instance::start_with_catalog(&client, &ns, "real-node", Arc::default(), catalog);
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    let message = degraded_for(&client, &ns, "db", "ContainerExiting").await;
    assert!(
        message.starts_with("Pod db-0 keeps failing: container mysql exited with code 1 ("),
        "{message}"
    );
    assert!(
        message.contains("its log ends: ") && message.contains("MYSQL_ROOT_PASSWORD"),
        "the entrypoint's own words: {message}"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_readiness_probe_that_never_passes_is_said_after_its_grace() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-probe").await;
    let catalog = catalog_with(|yaml| {
        yaml["tomcat"]["readiness"]["httpGet"] = "/no-such-page".into();
    });
    let reconciler =
        Instance::start_with_catalog(&client, &ns, "real-node", Arc::default(), catalog);
    create_stack(&client, &ns, "web", json!({"choice": "tomcat"})).await;
    let message = degraded_for(&client, &ns, "web", "NeverReady").await;
    assert!(
        message.contains("container tomcat has run for ")
            && message
                .ends_with("and its readiness probe (HTTP GET /no-such-page) has not passed."),
        "{message}"
    );
    reconciler.shut_down().await;
}

#[tokio::test]
async fn a_claim_that_cannot_bind_is_said_in_the_volume_controllers_words() {
    let client = admin().await;
    let ns = crate::kit::fresh_namespace(&client, "real-claim").await;
    // A platform team names a class the cluster does not have.
    let class = format!("{ns}-missing");
    let catalog = catalog_with(|yaml| {
        yaml["mysql"]["storageClass"] = class.clone().into();
    });
    let reconciler =
        Instance::start_with_catalog(&client, &ns, "real-node", Arc::default(), catalog);
    create_stack(&client, &ns, "db", json!({"choice": "mysql"})).await;
    let message = degraded_for(&client, &ns, "db", "VolumeUnbound").await;
    assert_eq!(
        message,
        format!(
            "Pod db-0 cannot start: its volume claim data-db-0 is not bound (storage class \
             {class}): storageclass.storage.k8s.io \"{class}\" not found"
        )
    );
    reconciler.shut_down().await;
}
