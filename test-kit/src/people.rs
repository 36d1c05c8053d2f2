//! People and what they may do: the API server's authorizer asked about someone (and
//! waited on), RBAC grants to ServiceAccounts, a group bound to cluster-admin, and
//! people's tokens and the clients and [`Person`]s that carry them.

use crate::serving::shared_config;

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
