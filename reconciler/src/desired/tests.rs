//! The children of a Stack as the shipped catalog makes them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::catalog::Catalog;
use crate::stack::StackSpec;

fn stack(choice: &str) -> Stack {
    Stack {
        metadata: ObjectMeta {
            name: Some("shop".into()),
            namespace: Some("team-a".into()),
            uid: Some("u-1".into()),
            ..Default::default()
        },
        spec: StackSpec {
            choice: choice.into(),
            replicas: 2,
            exposure: "NodePort".into(),
            ..Default::default()
        },
        status: None,
    }
}

#[test]
fn child_pods_run_restricted_without_a_token_and_no_password_in_any_command() {
    let catalog = Catalog::load(None).expect("catalog");
    for choice in ["mysql", "tomcat"] {
        let entry = catalog.get(choice).expect("entry");
        let c = desired(
            &stack(choice),
            entry,
            Passwords {
                user: "pw-xyz",
                admin: "admin-xyz",
            },
        )
        .expect("children");
        let pod = match &c.workload {
            Workload::Stateful(sts) => sts.spec.as_ref().map(|s| &s.template),
            Workload::Stateless(d) => d.spec.as_ref().map(|s| &s.template),
        }
        .and_then(|t| t.spec.as_ref())
        .expect("pod spec");
        assert_eq!(pod.automount_service_account_token, Some(false), "{choice}");
        let container = &pod.containers[0];
        let security = container.security_context.as_ref().expect("security");
        assert_eq!(security.allow_privilege_escalation, Some(false), "{choice}");
        assert_eq!(
            security.capabilities.as_ref().and_then(|c| c.drop.clone()),
            Some(vec!["ALL".to_string()])
        );
        assert_eq!(
            security.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
            Some("RuntimeDefault")
        );
        // Commands name passwords only as variables the container's environment fills.
        let commands = serde_json::to_string(&(
            &container.readiness_probe,
            &container.liveness_probe,
            &container.lifecycle,
            &container.command,
            &container.args,
        ))
        .expect("json");
        assert!(
            !commands.contains("pw-xyz") && !commands.contains("admin-xyz"),
            "{commands}"
        );
    }
    let mysql = desired(
        &stack("mysql"),
        catalog.get("mysql").expect("mysql"),
        Passwords::placeholder("pw"),
    )
    .expect("children");
    let Workload::Stateful(sts) = &mysql.workload else {
        panic!("a StatefulSet")
    };
    let pod = sts
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod");
    let security = pod.containers[0]
        .security_context
        .as_ref()
        .expect("security");
    assert_eq!(
        security.run_as_non_root,
        Some(true),
        "MySQL's image runs as mysql"
    );
    assert_eq!(security.run_as_user, Some(999));
    assert_eq!(
        pod.security_context.as_ref().and_then(|s| s.fs_group),
        Some(999),
        "and owns its volume"
    );
}

#[test]
fn mysql_gets_a_statefulset_with_storage_a_headless_service_and_a_secret() {
    let catalog = Catalog::load(None).expect("catalog");
    let mut s = stack("mysql");
    s.spec.storage = Some("5Gi".into());
    let c = desired(
        &s,
        catalog.get("mysql").expect("mysql"),
        Passwords {
            user: "pw",
            admin: "root-pw",
        },
    )
    .expect("children");
    let Workload::Stateful(sts) = &c.workload else {
        panic!("a StatefulSet")
    };
    let spec = sts.spec.as_ref().expect("spec");
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(spec.service_name.as_deref(), Some("shop-headless"));
    let claim = &spec.volume_claim_templates.as_ref().expect("claims")[0];
    let size = &claim
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .expect("size")["storage"];
    assert_eq!(size.0, "5Gi");
    let container = &spec.template.spec.as_ref().expect("pod").containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("docker.io/library/mysql:8.4")
    );
    assert!(container.readiness_probe.is_some() && container.liveness_probe.is_some());
    // Apps get user app with its own password; root's is kept apart, both by reference.
    let env = container.env.as_ref().expect("env");
    let var = |name: &str| env.iter().find(|e| e.name == name).expect(name);
    assert_eq!(var("MYSQL_USER").value.as_deref(), Some("app"));
    let key = |name: &str| {
        assert_eq!(var(name).value, None, "{name} goes by reference");
        var(name)
            .value_from
            .as_ref()
            .and_then(|v| v.secret_key_ref.as_ref())
            .map(|r| (r.name.clone(), r.key.clone()))
    };
    assert_eq!(
        key("MYSQL_PASSWORD"),
        Some(("shop-credentials".into(), PASSWORD_KEY.into()))
    );
    assert_eq!(
        key("MYSQL_ROOT_PASSWORD"),
        Some(("shop-credentials".into(), ADMIN_PASSWORD_KEY.into()))
    );
    assert!(
        container
            .lifecycle
            .as_ref()
            .and_then(|l| l.post_start.as_ref())
            .is_some()
    );
    assert_eq!(
        c.headless
            .as_ref()
            .and_then(|h| h.spec.as_ref())
            .and_then(|s| s.cluster_ip.as_deref()),
        Some("None")
    );
    assert_eq!(
        c.service.spec.as_ref().and_then(|s| s.type_.as_deref()),
        Some("NodePort")
    );
    let secret = c.secret.expect("secret");
    assert_eq!(secret.metadata.name.as_deref(), Some("shop-credentials"));
    let data = secret.data.expect("data");
    assert_eq!(
        data.keys().map(String::as_str).collect::<Vec<_>>(),
        [ADMIN_PASSWORD_KEY, PASSWORD_KEY]
    );
    assert_ne!(data[PASSWORD_KEY], data[ADMIN_PASSWORD_KEY]);
    let owner = &sts.metadata.owner_references.as_ref().expect("owners")[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Stack", Some(true))
    );
}

#[test]
fn a_stack_that_keeps_its_data_does_not_own_its_volumes_or_their_password() {
    let catalog = Catalog::load(None).expect("catalog");
    let entry = catalog.get("mysql").expect("mysql");
    let retention = |c: &Children| match &c.workload {
        Workload::Stateful(set) => set
            .spec
            .as_ref()
            .and_then(|s| s.persistent_volume_claim_retention_policy.clone())
            .and_then(|p| p.when_deleted),
        Workload::Stateless(_) => None,
    };
    let secret_owners = |c: &Children| {
        c.secret
            .as_ref()
            .and_then(|s| s.metadata.owner_references.clone())
    };
    let kept = desired(&stack("mysql"), entry, Passwords::placeholder("pw")).expect("children");
    assert_eq!(retention(&kept).as_deref(), Some("Retain"));
    assert_eq!(secret_owners(&kept), None);
    let secret = kept.secret.as_ref().expect("a Secret");
    assert_eq!(
        secret.metadata.annotations.as_ref().expect("annotations")[KEPT_WITH_ANNOTATION],
        "data-shop-"
    );
    let mut deleting = stack("mysql");
    deleting.spec.deletion_policy = crate::stack::DeletionPolicy::Delete;
    let removed = desired(&deleting, entry, Passwords::placeholder("pw")).expect("children");
    assert_eq!(retention(&removed).as_deref(), Some("Delete"));
    assert_eq!(secret_owners(&removed).map(|o| o.len()), Some(1));
}

#[test]
fn tomcat_gets_a_deployment_and_a_service_only() {
    let catalog = Catalog::load(None).expect("catalog");
    let mut s = stack("tomcat");
    s.spec.exposure = "ClusterIP".into();
    s.spec.version = Some("11.0".into());
    let c = desired(
        &s,
        catalog.get("tomcat").expect("tomcat"),
        Passwords::placeholder(""),
    )
    .expect("children");
    let Workload::Stateless(d) = &c.workload else {
        panic!("a Deployment")
    };
    let container = &d
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod")
        .containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("docker.io/library/tomcat:11.0")
    );
    assert!(c.secret.is_none() && c.headless.is_none());
    assert_eq!(
        c.service.spec.as_ref().and_then(|s| s.type_.as_deref()),
        Some("ClusterIP")
    );
}

#[test]
fn an_unknown_version_or_an_unsaved_stack_is_an_error() {
    let catalog = Catalog::load(None).expect("catalog");
    let mut s = stack("tomcat");
    s.spec.version = Some("7".into());
    let err = desired(
        &s,
        catalog.get("tomcat").expect("tomcat"),
        Passwords::placeholder(""),
    )
    .expect_err("unknown version");
    assert!(err.to_string().contains("10.1, 11.0"));
    let mut unsaved = stack("tomcat");
    unsaved.metadata.uid = None;
    assert_eq!(
        desired(
            &unsaved,
            catalog.get("tomcat").expect("tomcat"),
            Passwords::placeholder("")
        ),
        Err(ChildrenError::Incomplete)
    );
}

#[test]
fn passwords_are_random_and_unquoted() {
    let a = generate_password().expect("random");
    let b = generate_password().expect("random");
    assert_eq!(a.len(), 24);
    assert_ne!(a, b);
    assert!(a.chars().all(|c| c.is_ascii_alphanumeric()));
}

#[test]
fn a_secret_from_before_app_users_moves_its_one_password_to_whoever_it_was_for() {
    let catalog = Catalog::load(None).expect("catalog");
    let with_admin = catalog.get("mysql").expect("mysql");
    assert_eq!(
        legacy_password_move(with_admin, "new"),
        Some(serde_json::json!([
            {"op": "move", "from": "/data/password", "path": "/data/admin-password"},
            {"op": "add", "path": "/data/app-password", "value": "bmV3"},
        ]))
    );
    let mut alone = with_admin.clone();
    alone.admin = None;
    assert_eq!(
        legacy_password_move(&alone, "new"),
        Some(serde_json::json!([
            {"op": "move", "from": "/data/password", "path": "/data/app-password"},
        ]))
    );
    assert_eq!(
        legacy_password_move(catalog.get("tomcat").expect("tomcat"), "new"),
        None
    );
}

#[test]
fn the_user_password_is_read_under_its_key_or_the_old_one() {
    let secret = |pairs: &[(&str, &str)]| k8s_openapi::api::core::v1::Secret {
        data: Some(
            pairs
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        k8s_openapi::ByteString(v.as_bytes().to_vec()),
                    )
                })
                .collect(),
        ),
        ..Default::default()
    };
    assert_eq!(
        password_in(&secret(&[("app-password", "a"), ("admin-password", "r")])).as_deref(),
        Some("a")
    );
    assert_eq!(
        password_in(&secret(&[("password", "old")])).as_deref(),
        Some("old")
    );
    assert_eq!(password_in(&secret(&[("admin-password", "r")])), None);
}
