//! Cluster objects a test or a benchmark sets up and takes down: Portico's CRDs
//! applied, namespaces made and deleted, Pods stopped, objects created (in bulk, or
//! again until admission lets them), and the lock on the real node's heaviest tests.

/// The admin client of the shared test cluster, with Portico's Stack CRD applied.
pub async fn admin_with_stack_crd() -> kube::Client {
    admin_with_stack_crd_on(portico_control_plane::cluster::TestCluster::shared()).await
}

/// The admin client of `cluster`, with Portico's CRDs (Stack, StackBinding) applied.
pub async fn admin_with_stack_crd_on(
    cluster: &portico_control_plane::cluster::TestCluster,
) -> kube::Client {
    use portico_control_plane::apply;
    let client = cluster.admin_client().await.expect("admin client");
    let crds = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut documents = apply::read_documents(&crds.join("stack.yaml")).expect("Stack CRD");
    documents
        .extend(apply::read_documents(&crds.join("stackbinding.yaml")).expect("StackBinding CRD"));
    apply::apply_all(&client, documents)
        .await
        .expect("Portico's CRDs apply");
    client
}

/// A namespace of the test's own, named `PREFIX-xxxxx` by the API server.
pub async fn fresh_namespace(client: &kube::Client, prefix: &str) -> String {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(
        serde_json::json!({"metadata": {"generateName": format!("{prefix}-")}}),
    )
    .expect("namespace");
    api.create(&kube::api::PostParams::default(), &ns)
        .await
        .expect("create namespace")
        .metadata
        .name
        .expect("generated name")
}

/// Held by the tests that load the real node hardest (a `yes` log flood, 10 MB
/// through a terminal): on 2 cores, two of them at once starve the kubelet's streams
/// and each other's measures.
pub static REAL_NODE_HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Stops every Pod of `ns` at once (no grace) and waits until they are gone: a heavy
/// test gives the node back before the next one holds [`REAL_NODE_HEAVY`]. (Deleting
/// the namespace alone lets its Pods run on for a while.)
pub async fn stop_pods(client: &kube::Client, ns: &str) {
    use k8s_openapi::api::core::v1::Pod;
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), ns);
    let now = kube::api::DeleteParams {
        grace_period_seconds: Some(0),
        ..Default::default()
    };
    pods.delete_collection(&now, &Default::default())
        .await
        .expect("delete the Pods");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !pods
        .list_metadata(&Default::default())
        .await
        .expect("list the Pods")
        .items
        .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the Pods of {ns} never went"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Deletes namespace `ns` and what it holds, without waiting for it to go.
pub async fn delete_namespace(client: &kube::Client, ns: &str) {
    use k8s_openapi::api::core::v1::Namespace;
    let api: kube::Api<Namespace> = kube::Api::all(client.clone());
    api.delete(ns, &kube::api::DeleteParams::background())
        .await
        .expect("delete namespace");
}

/// Creates the namespace `name` (the benchmarks name theirs; tests take
/// [`fresh_namespace`]).
pub async fn create_namespace(client: &kube::Client, name: &str) {
    let namespace: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
            .expect("a namespace");
    kube::Api::all(client.clone())
        .create(&kube::api::PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
}

/// Creates `object` with `api`, asking again for 20 s while it is refused: in a fresh
/// namespace the default ServiceAccount, which admission wants for a Pod, comes shortly.
pub async fn create_soon<K>(api: &kube::Api<K>, object: &K)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while let Err(error) = api.create(&kube::api::PostParams::default(), object).await {
        assert!(
            std::time::Instant::now() < deadline,
            "create {:?}: {error}",
            object.meta().name
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

/// Creates `objects` in `api`, 32 at a time (a benchmark's load).
pub async fn create_all(
    api: &kube::Api<kube::api::DynamicObject>,
    objects: impl Iterator<Item = kube::api::DynamicObject>,
) {
    use futures::StreamExt;
    futures::stream::iter(objects)
        .map(|object| {
            let api = api.clone();
            async move {
                api.create(&kube::api::PostParams::default(), &object)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(32)
        .for_each(|r| async move { r.expect("create") })
        .await;
}
