//! The in-cluster manifests under deploy/: every one passes a server-side dry-run
//! apply on a real API server, no role holds a wildcard, the kustomization lists
//! every file, the catalog ConfigMap matches the catalog Portico ships, and the
//! portal's and the reconciler's service accounts can do exactly what each needs
//! (checked with SubjectAccessReviews after applying the RBAC for real).

mod common;

use std::path::PathBuf;

use kube::api::DynamicObject;
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_server::stacks::catalog::Catalog;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The files the kustomization lists, in order.
fn kustomization_files() -> Vec<PathBuf> {
    let text =
        std::fs::read_to_string(deploy_dir().join("kustomization.yaml")).expect("kustomization");
    let doc: serde_yaml::Value = serde_yaml::from_str(&text).expect("YAML");
    doc["resources"]
        .as_sequence()
        .expect("resources")
        .iter()
        .map(|r| deploy_dir().join(r.as_str().expect("a path")))
        .collect()
}

fn documents(files: &[PathBuf]) -> Vec<DynamicObject> {
    files
        .iter()
        .flat_map(|f| apply::read_documents(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect()
}

fn kind(obj: &DynamicObject) -> &str {
    obj.types
        .as_ref()
        .map(|t| t.kind.as_str())
        .unwrap_or_default()
}

#[test]
fn the_kustomization_lists_every_manifest_and_no_role_holds_a_wildcard() {
    let listed = kustomization_files();
    let base: Vec<PathBuf> = std::fs::read_dir(deploy_dir().join("base"))
        .expect("base dir")
        .map(|e| e.expect("entry").path())
        .collect();
    for file in &base {
        assert!(
            listed.contains(file),
            "{} is not in deploy/kustomization.yaml",
            file.display()
        );
    }
    let docs = documents(&listed);
    let roles: Vec<_> = docs
        .iter()
        .filter(|d| matches!(kind(d), "Role" | "ClusterRole"))
        .collect();
    assert!(roles.len() >= 3, "portal, reconciler and lease roles");
    for role in roles {
        for rule in role.data["rules"].as_array().expect("rules") {
            for key in [
                "verbs",
                "resources",
                "apiGroups",
                "resourceNames",
                "nonResourceURLs",
            ] {
                for value in rule[key].as_array().into_iter().flatten() {
                    assert_ne!(value, "*", "wildcard in {:?} {key}", role.metadata.name);
                }
            }
        }
    }
}

#[test]
fn the_catalog_configmap_is_the_shipped_catalog() {
    let docs = documents(&[deploy_dir().join("base/catalog.yaml")]);
    let embedded = docs[0].data["data"]["catalog.yaml"]
        .as_str()
        .expect("catalog.yaml key");
    let shipped =
        std::fs::read_to_string(deploy_dir().join("catalog/stacks.yaml")).expect("catalog");
    assert_eq!(
        Catalog::parse(embedded).expect("parses"),
        Catalog::parse(&shipped).expect("parses")
    );
}

async fn may(
    client: &kube::Client,
    user: &str,
    verb: &str,
    group: &str,
    resource: &str,
    ns: Option<&str>,
) -> bool {
    let groups = ["system:serviceaccounts", "system:authenticated"];
    common::subject_may(client, (user, &groups), verb, (group, resource), ns).await
}

#[tokio::test]
async fn every_manifest_passes_a_server_side_dry_run_and_rbac_is_least_privilege() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let docs = documents(&kustomization_files());
    // Namespaced objects need their namespace to exist even in a dry run; the CRD
    // must be established for nothing else to refer to it. Both are applied for real,
    // as are the RBAC objects checked below.
    let real: Vec<DynamicObject> = docs
        .iter()
        .filter(|d| {
            matches!(
                kind(d),
                "Namespace"
                    | "CustomResourceDefinition"
                    | "ServiceAccount"
                    | "ClusterRole"
                    | "ClusterRoleBinding"
                    | "Role"
                    | "RoleBinding"
            )
        })
        .cloned()
        .collect();
    apply::apply_all(&client, real)
        .await
        .expect("namespace, CRD and RBAC apply");
    let checked = apply::dry_run_all(&client, &docs)
        .await
        .expect("every manifest passes a dry run");
    assert_eq!(checked.len(), docs.len());
    for expected in [
        "Deployment/portico",
        "Deployment/portico-reconciler",
        "Service/portico",
        "Ingress/portico",
        "PodDisruptionBudget/portico",
    ] {
        assert!(
            checked.iter().any(|c| c == expected),
            "{expected} in {checked:?}"
        );
    }

    // The internet-facing portal: the CRD catalog, and nothing else at all.
    let portal = "system:serviceaccount:portico:portico-portal";
    assert!(
        may(
            &client,
            portal,
            "list",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None
        )
        .await
    );
    // Token mode: users' own tokens do the work; the portal can become no one.
    for whom in ["users", "groups", "serviceaccounts"] {
        assert!(
            !may(&client, portal, "impersonate", "", whom, None).await,
            "the portal cannot impersonate {whom}"
        );
    }
    let portal_may_not: [(&str, &str, &str, Option<&str>); 11] = [
        ("get", "", "secrets", Some("team")),
        ("list", "", "secrets", None),
        ("create", "apps", "statefulsets", Some("team")),
        ("patch", "apps", "deployments", Some("team")),
        ("create", "", "services", Some("team")),
        ("create", "portico.dev", "stacks", Some("team")),
        ("patch", "portico.dev", "stacks/status", Some("team")),
        ("update", "coordination.k8s.io", "leases", Some("portico")),
        ("list", "", "pods", Some("team")),
        (
            "create",
            "authorization.k8s.io",
            "subjectaccessreviews",
            None,
        ),
        (
            "create",
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            None,
        ),
    ];
    for (verb, group, resource, ns) in portal_may_not {
        assert!(
            !may(&client, portal, verb, group, resource, ns).await,
            "the portal must not {verb} {group}/{resource} in {ns:?}"
        );
    }

    // The reconciler: Stacks, their children, Events, its Lease; nothing outside that.
    let reconciler = "system:serviceaccount:portico:portico-reconciler";
    let reconciler_may: [(&str, &str, &str, Option<&str>); 6] = [
        ("watch", "portico.dev", "stacks", None),
        ("patch", "portico.dev", "stacks/status", Some("team")),
        ("create", "apps", "statefulsets", Some("team")),
        ("delete", "apps", "deployments", Some("team")),
        ("create", "", "secrets", Some("team")),
        ("update", "coordination.k8s.io", "leases", Some("portico")),
    ];
    for (verb, group, resource, ns) in reconciler_may {
        assert!(
            may(&client, reconciler, verb, group, resource, ns).await,
            "the reconciler needs to {verb} {group}/{resource} in {ns:?}"
        );
    }
    let reconciler_may_not: [(&str, &str, &str, Option<&str>); 10] = [
        ("create", "portico.dev", "stacks", Some("team")),
        (
            "update",
            "coordination.k8s.io",
            "leases",
            Some("kube-system"),
        ),
        ("list", "", "pods", Some("team")),
        ("create", "", "pods", Some("team")),
        ("list", "", "configmaps", Some("kube-system")),
        ("create", "", "persistentvolumeclaims", Some("team")),
        ("impersonate", "", "groups", None),
        (
            "create",
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            None,
        ),
        (
            "delete",
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            None,
        ),
        ("create", "batch", "jobs", Some("team")),
    ];
    for (verb, group, resource, ns) in reconciler_may_not {
        assert!(
            !may(&client, reconciler, verb, group, resource, ns).await,
            "the reconciler must not {verb} {group}/{resource} in {ns:?}"
        );
    }

    // No Service selects the reconciler's pods: nothing can be routed to them.
    let reconciler_pods = docs
        .iter()
        .find(|d| {
            kind(d) == "Deployment" && d.metadata.name.as_deref() == Some("portico-reconciler")
        })
        .and_then(|d| d.data["spec"]["template"]["metadata"]["labels"].as_object())
        .expect("the reconciler's pod labels")
        .clone();
    for service in docs.iter().filter(|d| kind(d) == "Service") {
        let selector = service.data["spec"]["selector"]
            .as_object()
            .expect("a selector");
        assert!(
            !selector
                .iter()
                .all(|(k, v)| reconciler_pods.get(k) == Some(v)),
            "Service {:?} selects the reconciler",
            service.metadata.name
        );
    }
}
