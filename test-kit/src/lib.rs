//! The test kit, shared by the integration tests and the benchmarks: serving a Portico router on loopback, and asking
//! the API server's authorizer about someone.
// Tests stop loudly at the first surprise: so does what they are built from.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod jaeger;
pub mod nodes;
pub mod process;
pub mod stacks;

use portico_server::auth::identity::{IdentityConfig, IdentityMode};
use portico_server::auth::session::SessionKey;
use portico_server::live::budgets::limits::LiveLimits;
use portico_server::web::state::AppState;

/// Portico's router over `client`, serving on a free loopback port with connection
/// info (sign-in attempts are counted per peer); `identity` switches from local mode.
/// Returns the origin (`http://127.0.0.1:PORT`) and the state, once the CRD catalog
/// has loaded.
pub async fn serve(
    client: &kube::Client,
    identity: Option<(IdentityConfig, kube::Config)>,
) -> (String, AppState) {
    serve_limited(client, identity, None).await
}

/// Portico in token mode over `client` (people act from the shared test cluster's
/// configuration with their own tokens), with `live` limits if given.
pub async fn serve_token_mode(
    client: &kube::Client,
    live: Option<LiveLimits>,
) -> (String, AppState) {
    let identity = (with_sessions(IdentityMode::Token), shared_config().await);
    serve_limited(client, Some(identity), live).await
}

/// As `serve`, with `live` limits if given.
pub async fn serve_limited(
    client: &kube::Client,
    identity: Option<(IdentityConfig, kube::Config)>,
    live: Option<LiveLimits>,
) -> (String, AppState) {
    let (state, watches) = new_state(client);
    let state = match identity {
        Some((identity, config)) => state.with_identity(identity, config),
        None => state,
    };
    let state = match live {
        Some(limits) => state.with_live_limits(limits),
        None => state,
    };
    start(state, watches).await
}

/// Portico in single sign-on mode over `client`, its provider at `issuer` (which the
/// tests that use this never reach: they attack what comes before the provider).
pub async fn serve_oidc_mode(client: &kube::Client, issuer: &str) -> (String, AppState) {
    let provider =
        portico_server::auth::oidc::OidcProvider::new(portico_server::auth::oidc::OidcSettings {
            issuer: issuer.into(),
            client_id: "portico".into(),
            client_secret: None,
            redirect_url: "http://127.0.0.1/auth/callback".into(),
            scopes: vec!["openid".into()],
            auth_params: vec![],
            ca_pem: None,
            post_logout_redirect_url: None,
        })
        .expect("settings");
    let (state, watches) = new_state(client);
    let state = state
        .with_identity(with_sessions(IdentityMode::Oidc), shared_config().await)
        .with_single_sign_on(provider);
    start(state, watches).await
}

/// People identified as `mode` says, with sessions sealed by a key of the test's own.
fn with_sessions(mode: IdentityMode) -> IdentityConfig {
    IdentityConfig {
        mode,
        sessions: Some(SessionKey::random().expect("key")),
        ..IdentityConfig::local()
    }
}

/// The shared test cluster's configuration: what people's clients are built from.
pub async fn shared_config() -> kube::Config {
    portico_server::cluster::config::config(
        Some(portico_control_plane::cluster::TestCluster::shared().admin_kubeconfig()),
        None,
    )
    .await
    .expect("admin config")
}

/// The state over `client` in local mode, and the future driving its watches.
fn new_state(
    client: &kube::Client,
) -> (
    AppState,
    impl std::future::Future<Output = ()> + Send + 'static,
) {
    let options = portico_server::config::leptos_options(None).expect("leptos options");
    let catalog = portico_server::reconcile::catalog::Catalog::load(None).expect("catalog");
    let catalog = portico_server::reconcile::catalog::LiveCatalog::fixed(catalog);
    AppState::new(client.clone(), options, catalog)
}

/// Portico served under the base path `base` (e.g. `/portico`), in local mode.
pub async fn serve_at(client: &kube::Client, base: &str) -> (String, AppState) {
    let (state, watches) = new_state(client);
    let base = portico_core::base_path::BasePath::new(base).expect("a base path");
    start(state.with_base_path(base), watches).await
}

async fn start(
    state: AppState,
    watches: impl std::future::Future<Output = ()> + Send + 'static,
) -> (String, AppState) {
    tokio::spawn(watches);
    assert!(
        state
            .kinds
            .wait_loaded(std::time::Duration::from_secs(30))
            .await
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("addr");
    let router = portico_server::web::router::router(state.clone());
    tokio::spawn(portico_server::web::router::serve(
        listener,
        router,
        std::future::pending(),
    ));
    (format!("http://{addr}"), state)
}

/// The kind registry over `client`, loaded (its driver runs until the test ends).
pub async fn kinds(client: &kube::Client) -> portico_server::cluster::registry::KindRegistry {
    let (kinds, driver) = portico_server::cluster::registry::KindRegistry::start(
        client.clone(),
        ("portico.dev", "stacks"),
    );
    tokio::spawn(driver);
    assert!(kinds.wait_loaded(std::time::Duration::from_secs(30)).await);
    kinds
}

/// Whether `user` (in `groups`) may `verb` the `group`/`resource` in `namespace`, as
/// the API server's authorizer says (a SubjectAccessReview). A review that fails
/// fails the test: an unanswered question is not a no.
pub async fn subject_may(
    client: &kube::Client,
    (user, groups): (&str, &[&str]),
    verb: &str,
    (group, resource): (&str, &str),
    namespace: Option<&str>,
) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(groups.iter().map(|g| g.to_string()).collect()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    kube::Api::<SubjectAccessReview>::all(client.clone())
        .create(&kube::api::PostParams::default(), &review)
        .await
        .unwrap_or_else(|e| panic!("the review of {verb} {group}/{resource} for {user}: {e}"))
        .status
        .is_some_and(|s| s.allowed)
}

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

/// Binds `group` to cluster-admin, so a test can show that claiming it gets nowhere.
pub async fn bind_group_to_cluster_admin(client: &kube::Client, group: &str) {
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": format!("test-{}", group.replace(':', "-"))},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]
    });
    portico_control_plane::apply::apply_all(
        client,
        vec![serde_json::from_value(binding).expect("binding")],
    )
    .await
    .expect("binding applies");
}

/// Waits (up to 20 s) until the authorizer says `user` (in `groups`) may `verb` the
/// `group`/`resource` in `namespace`: it learns new bindings from a watch.
pub async fn until_subject_may(
    client: &kube::Client,
    (user, groups): (&str, &[&str]),
    verb: &str,
    (group, resource): (&str, &str),
    namespace: Option<&str>,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !subject_may(client, (user, groups), verb, (group, resource), namespace).await {
        assert!(
            std::time::Instant::now() < deadline,
            "{user} never got {verb} on {resource} in {namespace:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The ServiceAccount `account` of `ns`'s user name.
pub fn account_user(ns: &str, account: &str) -> String {
    format!("system:serviceaccount:{ns}:{account}")
}

/// A Role `role` in `ns` allowing `verbs` on `group`/`resource`, bound to the
/// ServiceAccount `account` of `ns`; returns once the authorizer knows the binding
/// (it learns new ones from a watch).
pub async fn grant(
    client: &kube::Client,
    ns: &str,
    role: &str,
    (group, resource): (&str, &str),
    verbs: &[&str],
    account: &str,
) {
    let rule = serde_json::json!({"apiGroups": [group], "resources": [resource], "verbs": verbs});
    grant_rule(client, ns, role, rule, account).await;
    let last = verbs.last().copied().unwrap_or("get");
    let who = account_user(ns, account);
    until_subject_may(client, (&who, &[]), last, (group, resource), Some(ns)).await;
}

/// A Role `role` in `ns` with the one RBAC `rule` (say, with `resourceNames`), bound to
/// the ServiceAccount `account` of `ns`; returns once applied, not once the authorizer
/// knows it.
pub async fn grant_rule(
    client: &kube::Client,
    ns: &str,
    role: &str,
    rule: serde_json::Value,
    account: &str,
) {
    use serde_json::json;
    let docs = vec![
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": role, "namespace": ns},
            "rules": [rule]
        }))
        .expect("role"),
        serde_json::from_value(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": role, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
            "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": ns}]
        }))
        .expect("binding"),
    ];
    portico_control_plane::apply::apply_all(client, docs)
        .await
        .expect("RBAC applies");
}

/// A person the backend's endpoints act for: the ServiceAccount whose `token` is
/// given, with a client and access reviews of their own.
pub struct Person {
    pub caller: portico_server::cluster::caller::Caller,
    pub client: kube::Client,
    pub reviews: portico_server::auth::access::AccessReviews,
}

impl Person {
    /// `who` (a ServiceAccount's user name) acting with `token`.
    pub async fn new(admin: &kube::Client, who: &str, token: String) -> Self {
        use portico_server::cluster::caller::{Caller, Token};
        let pool = std::sync::Arc::new(portico_server::cluster::pool::ClientPool::new(
            Some(shared_config().await),
            admin.clone(),
            portico_server::portal_metrics::PORTAL.api_layer(),
        ));
        let caller = Caller::Bearer {
            name: who.to_string(),
            token: Token(token),
        };
        let client = pool.for_caller(&caller).expect("client");
        let reviews = portico_server::auth::access::AccessReviews::new(pool);
        Self {
            caller,
            client,
            reviews,
        }
    }

    /// Who asks, for the endpoints that say what the person may do.
    pub fn asker(&self) -> portico_server::web::backend::asker::Asker<'_> {
        portico_server::web::backend::asker::Asker {
            client: &self.client,
            reviews: &self.reviews,
            who: &self.caller,
        }
    }
}

/// A new ServiceAccount `account` in `ns` and an hour's token for it.
pub async fn account_token(client: &kube::Client, ns: &str, account: &str) -> String {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::PostParams;
    let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(client.clone(), ns);
    let created: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": account}}))
            .expect("service account");
    accounts
        .create(&PostParams::default(), &created)
        .await
        .expect("service account");
    let request: TokenRequest = serde_json::from_value(
        serde_json::json!({"spec": {"audiences": [], "expirationSeconds": 3600}}),
    )
    .expect("token request");
    accounts
        .create_token_request(account, &PostParams::default(), &request)
        .await
        .expect("token")
        .status
        .expect("status")
        .token
}

/// A client of the shared test cluster that carries only `token` (a person's own).
pub async fn client_with_token(token: String) -> kube::Client {
    with_token(shared_config().await, &token)
}

/// A client of the cluster `kubeconfig` names that carries only `token`.
pub async fn client_as(kubeconfig: &std::path::Path, token: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    with_token(config, token)
}

fn with_token(mut config: kube::Config, token: &str) -> kube::Client {
    config.auth_info = kube::config::AuthInfo {
        token: Some(token.to_string().into()),
        ..Default::default()
    };
    kube::Client::try_from(config).expect("a client with the token")
}

/// Signs in to Portico at `origin` (token mode) with `token`: the `name=value` of the
/// session cookie, for a Cookie header.
pub async fn sign_in(origin: &str, token: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http");
    sign_in_from(&http, origin, token, None).await
}

/// As [`sign_in`], with `http` (redirects not followed), from `address` as the proxy
/// in front says (`X-Forwarded-For`): sign-in attempts are counted per address.
pub async fn sign_in_from(
    http: &reqwest::Client,
    origin: &str,
    token: &str,
    address: Option<&str>,
) -> String {
    let mut request = http
        .post(format!("{origin}/auth/login"))
        .header("origin", origin);
    if let Some(address) = address {
        request = request.header("x-forwarded-for", address);
    }
    let signed_in = request
        .form(&[("token", token)])
        .send()
        .await
        .expect("sign in");
    assert_eq!(signed_in.status().as_u16(), 303, "signed in");
    signed_in.headers()["set-cookie"]
        .to_str()
        .expect("cookie")
        .split(';')
        .next()
        .expect("pair")
        .to_string()
}

/// Portico's answer at `origin` to a sign-in with `token` (redirects not followed),
/// whatever it is.
pub async fn sign_in_answer(origin: &str, token: &str) -> reqwest::Response {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http")
        .post(format!("{origin}/auth/login"))
        .header("origin", origin)
        .form(&[("token", token)])
        .send()
        .await
        .expect("a sign-in answers")
}

/// A control plane of its own (a benchmark's) with the seed CRD `CrdKind` applied,
/// and its admin client.
pub async fn plane_with_crd_kind() -> (portico_control_plane::ControlPlane, kube::Client) {
    let plane = tokio::task::spawn_blocking(portico_control_plane::ControlPlane::start)
        .await
        .expect("join")
        .expect("control plane");
    let admin = plane.admin_client().await.expect("client");
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../end2end/fixtures/seeds/000-crdkind-crd.yaml");
    portico_control_plane::apply::apply_all(
        &admin,
        portico_control_plane::apply::read_documents(&seeds).expect("CRD"),
    )
    .await
    .expect("CRD applies");
    (plane, admin)
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

/// The seed CRD's objects (`CrdKind`, `iksoon.test.com/v1`) in `default`.
pub fn crd_kinds(client: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    let resource = kube::discovery::ApiResource {
        group: "iksoon.test.com".into(),
        version: "v1".into(),
        api_version: "iksoon.test.com/v1".into(),
        kind: "CrdKind".into(),
        plural: "crdplural".into(),
    };
    kube::Api::namespaced_with(client.clone(), "default", &resource)
}

/// A new ServiceAccount `account` in `ns`, signed in to Portico at `origin` (token
/// mode): its session cookie's `name=value`.
pub async fn signed_in_account(
    client: &kube::Client,
    origin: &str,
    ns: &str,
    account: &str,
) -> String {
    sign_in(origin, &account_token(client, ns, account).await).await
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

/// A `/proc/PID/status` memory field (`VmRSS:`, `VmHWM:`) in MB; NaN if unreadable.
pub fn rss_mb(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// The TCP connections process `pid` has open to `port` (on any address), from its
/// sockets and the kernel's table of connections (`/proc/PID/net/tcp`, `tcp6`).
pub fn tcp_connections_to(pid: u32, port: u16) -> usize {
    let sockets: std::collections::HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|link| {
            let link = link.to_string_lossy().into_owned();
            Some(link.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let established = "01";
    ["tcp", "tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).ok())
        .flat_map(|table| table.lines().skip(1).map(str::to_owned).collect::<Vec<_>>())
        .filter(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let remote_port = fields
                .get(2)
                .and_then(|remote| remote.rsplit_once(':'))
                .and_then(|(_, hex)| u16::from_str_radix(hex, 16).ok());
            remote_port == Some(port)
                && fields.get(3) == Some(&established)
                && fields.get(9).is_some_and(|inode| sockets.contains(*inode))
        })
        .count()
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

/// The number in environment variable `name` (a benchmark's setting), or `default`.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted`, nearest rank; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The median and the 99th percentile of `samples` (which this sorts), nearest rank;
/// NaN when empty.
pub fn p50_p99(samples: &mut [f64]) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (percentile(samples, 0.50), percentile(samples, 0.99))
}

/// User and system CPU time a process has used so far, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command (which may hold spaces) start after its ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of stat(5): 11 and 12 after the state.
    (ticks(11) + ticks(12)) / 100.0
}

/// The pid of the running process whose command line holds both `program` and
/// `also` (a control plane's kube-apiserver names its own directory in its flags).
pub fn pid_of(program: &str, also: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline);
            (cmdline.contains(program) && cmdline.contains(also)).then_some(pid)
        })
}

/// A pinned tool of the local cluster's (kubectl, whose kustomize is what `kubectl
/// apply -k` runs; helm), built once and cached by end2end/kubernetes/build.sh.
pub fn tool(name: &str) -> std::path::PathBuf {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../end2end/kubernetes/build.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg(name)
        .output()
        .unwrap_or_else(|e| panic!("build.sh {name}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}
