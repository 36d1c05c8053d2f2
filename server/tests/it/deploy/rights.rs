//! The portal's and the reconciler's rights, proved whole: every verb on every resource
//! (and subresource) that discovery serves, plus RBAC's special verbs, asked of the API
//! server's authorizer for each account with SubjectAccessReviews, cluster-wide, in
//! Portico's own namespace and in another. What is allowed must be exactly what
//! `deploy/rights.txt` lists, so a new grant fails this test until that file says why.
use std::collections::BTreeSet;

use futures::StreamExt;
use kube::api::{Api, PostParams};

/// The accounts whose rights are proved, as the allow-list names them.
const ACCOUNTS: [(&str, &str); 2] = [
    ("portal", "system:serviceaccount:portico:portico-portal"),
    (
        "reconciler",
        "system:serviceaccount:portico:portico-reconciler",
    ),
];

/// RBAC verbs that discovery does not list, with the resources they apply to.
const SPECIAL_VERBS: [(&str, &str, &[&str]); 9] = [
    ("", "users", &["impersonate"]),
    ("", "groups", &["impersonate"]),
    ("", "serviceaccounts", &["impersonate"]),
    ("authentication.k8s.io", "uids", &["impersonate"]),
    ("authentication.k8s.io", "userextras", &["impersonate"]),
    ("rbac.authorization.k8s.io", "roles", &["bind", "escalate"]),
    (
        "rbac.authorization.k8s.io",
        "clusterroles",
        &["bind", "escalate"],
    ),
    ("certificates.k8s.io", "signers", &["approve", "sign"]),
    ("policy", "podsecuritypolicies", &["use"]),
];

/// One question for the authorizer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Right {
    group: String,
    resource: String,
    verb: String,
    namespaced: bool,
}

/// Every (group, resource, verb) the API server serves, subresources included.
async fn served_rights(client: &kube::Client) -> BTreeSet<Right> {
    let mut lists = Vec::new();
    for version in client
        .list_core_api_versions()
        .await
        .expect("core versions")
        .versions
    {
        lists.push((
            String::new(),
            client
                .list_core_api_resources(&version)
                .await
                .expect("core resources"),
        ));
    }
    for group in client.list_api_groups().await.expect("API groups").groups {
        for version in &group.versions {
            let list = client
                .list_api_group_resources(&version.group_version)
                .await
                .unwrap_or_else(|e| panic!("resources of {}: {e}", version.group_version));
            lists.push((group.name.clone(), list));
        }
    }
    let mut rights = BTreeSet::new();
    for (group, list) in lists {
        for resource in list.resources {
            for verb in &resource.verbs {
                rights.insert(Right {
                    group: group.clone(),
                    resource: resource.name.clone(),
                    verb: verb.clone(),
                    namespaced: resource.namespaced,
                });
            }
        }
    }
    for (group, resource, verbs) in SPECIAL_VERBS {
        for verb in verbs {
            rights.insert(Right {
                group: group.into(),
                resource: resource.into(),
                verb: (*verb).into(),
                namespaced: resource == "serviceaccounts" || resource == "roles",
            });
        }
    }
    rights
}

/// Whether `user` may have `right` in `namespace` (None: everywhere). An error of the
/// review fails the test: an unanswered question is not a no.
async fn allowed(
    client: &kube::Client,
    user: &str,
    right: &Right,
    namespace: Option<&str>,
) -> bool {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    let (resource, subresource) = match right.resource.split_once('/') {
        Some((r, s)) => (r.to_string(), Some(s.to_string())),
        None => (right.resource.clone(), None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            groups: Some(vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:portico".into(),
                "system:authenticated".into(),
            ]),
            resource_attributes: Some(ResourceAttributes {
                verb: Some(right.verb.clone()),
                group: Some(right.group.clone()),
                resource: Some(resource),
                subresource,
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap_or_else(|e| panic!("the review of {right:?} for {user} in {namespace:?}: {e}"))
        .status
        .unwrap_or_else(|| panic!("the review of {right:?} has no status"))
        .allowed
}

/// Where a right holds: everywhere (cluster-wide), only in Portico's own namespace, or
/// in some namespace but not cluster-wide (a grant this proof would not expect).
fn scope(everywhere: bool, in_portico: bool, elsewhere: bool) -> Option<&'static str> {
    match (everywhere, in_portico, elsewhere) {
        (true, _, _) => Some("everywhere"),
        (false, true, false) => Some("portico"),
        (false, _, true) => Some("some-namespaces"),
        (false, false, false) => None,
    }
}

/// `account scope verb group/resource` lines of the allow-list (comments and reasons
/// after `#` dropped).
fn allow_list() -> BTreeSet<String> {
    let path = super::deploy_dir().join("rights.txt");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            l.split('#')
                .next()
                .unwrap_or_default()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|l| !l.is_empty())
        .collect()
}

#[tokio::test]
async fn the_portal_and_the_reconciler_hold_exactly_the_rights_the_allow_list_gives() {
    let client = portico_control_plane::cluster::TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    super::apply_rbac(&client).await;
    let other = crate::kit::fresh_namespace(&client, "rights").await;
    let served = served_rights(&client).await;
    assert!(
        served.len() > 300,
        "discovery served only {} rights",
        served.len()
    );
    let mut questions = Vec::new();
    for (account, user) in ACCOUNTS {
        for right in &served {
            questions.push((account, user, right.clone()));
        }
    }
    let held: BTreeSet<String> = futures::stream::iter(questions)
        .map(|(account, user, right)| {
            let (client, other) = (client.clone(), other.clone());
            async move {
                let everywhere = allowed(&client, user, &right, None).await;
                let (in_portico, elsewhere) = if right.namespaced && !everywhere {
                    (
                        allowed(&client, user, &right, Some("portico")).await,
                        allowed(&client, user, &right, Some(&other)).await,
                    )
                } else {
                    (false, false)
                };
                scope(everywhere, in_portico, elsewhere).map(|scope| {
                    let group = if right.group.is_empty() {
                        "core"
                    } else {
                        &right.group
                    };
                    format!(
                        "{account} {scope} {} {group}/{}",
                        right.verb, right.resource
                    )
                })
            }
        })
        .buffer_unordered(16)
        .filter_map(|line| async move { line })
        .collect()
        .await;
    let listed = allow_list();
    let unlisted: Vec<&String> = held.difference(&listed).collect();
    let unused: Vec<&String> = listed.difference(&held).collect();
    assert!(
        unlisted.is_empty() && unused.is_empty(),
        "rights held but not in deploy/rights.txt: {unlisted:#?}\nlisted but not held: {unused:#?}\n(all {} questions asked of {} served rights)",
        served.len() * ACCOUNTS.len(),
        served.len()
    );
}
