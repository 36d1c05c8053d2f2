//! The in-cluster manifests under deploy/: every one passes a server-side dry-run
//! apply on a real API server, no role holds a wildcard, the kustomization lists
//! every file, the catalog ConfigMap matches the catalog Portico ships, and the
//! portal's and the reconciler's service accounts can do exactly what each needs
//! (checked with SubjectAccessReviews after applying the RBAC for real).
use std::path::PathBuf;

use kube::api::DynamicObject;
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_server::reconcile::catalog::Catalog;
use serde::Deserialize;

mod rights;

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The files the base kustomization lists, in order, with those of the directories it
/// lists (the CRDs').
fn kustomization_files() -> Vec<PathBuf> {
    fn listed(dir: &std::path::Path) -> Vec<PathBuf> {
        let text = std::fs::read_to_string(dir.join("kustomization.yaml")).expect("kustomization");
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).expect("YAML");
        doc["resources"]
            .as_sequence()
            .expect("resources")
            .iter()
            .flat_map(|r| {
                let path = dir.join(r.as_str().expect("a path"));
                if path.is_dir() {
                    listed(&path)
                } else {
                    vec![path]
                }
            })
            .collect()
    }
    listed(&deploy_dir().join("base"))
}

/// The objects a command prints as YAML documents.
fn rendered(command: &mut std::process::Command) -> Vec<DynamicObject> {
    let out = command.output().expect("the renderer runs");
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_yaml::Deserializer::from_slice(&out.stdout)
        .map(|doc| serde_yaml::Value::deserialize(doc).expect("YAML"))
        .filter(|v| !v.is_null())
        .map(|v| serde_yaml::from_value(v).expect("a rendered object"))
        .collect()
}

fn kustomized(dir: &str) -> Vec<DynamicObject> {
    rendered(
        std::process::Command::new(crate::kit::tool("kubectl"))
            .arg("kustomize")
            .arg(deploy_dir().join(dir)),
    )
}

fn name_of(obj: &DynamicObject) -> String {
    format!(
        "{}/{}",
        kind(obj),
        obj.metadata.name.clone().unwrap_or_default()
    )
}

/// Kind/name of each object, sorted.
fn names(docs: &[DynamicObject]) -> Vec<String> {
    let mut names: Vec<String> = docs.iter().map(name_of).collect();
    names.sort();
    names
}

#[test]
fn every_kustomization_renders_the_base_with_its_changes_only() {
    let shipped = kustomized(".");
    assert_eq!(names(&shipped), names(&documents(&kustomization_files())));
    // The local overlay changes the image, the host and the catalog, nothing else.
    let local = kustomized("overlays/local");
    assert_eq!(names(&local), names(&shipped));
    let images: Vec<&str> = local
        .iter()
        .filter(|d| kind(d) == "Deployment")
        .flat_map(|d| {
            d.data["spec"]["template"]["spec"]["containers"]
                .as_array()
                .expect("containers")
        })
        .filter_map(|c| c["image"].as_str())
        .collect();
    assert_eq!(images, ["portico.local/portico:dev"; 2]);
    let catalog = local
        .iter()
        .find(|d| {
            kind(d) == "ConfigMap" && d.metadata.name.as_deref() == Some("portico-stack-catalog")
        })
        .expect("the catalog ConfigMap");
    let local_catalog = std::fs::read_to_string(deploy_dir().join("overlays/local/stacks.yaml"))
        .expect("the local catalog");
    assert_eq!(catalog.data["data"]["catalog.yaml"], local_catalog.as_str());
    assert!(
        names(&kustomized("overlays/example")).len() >= shipped.len(),
        "the example overlay keeps the base"
    );
}

/// `helm template portico deploy/chart --namespace portico` with `extra` arguments.
fn helm_template(extra: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(crate::kit::tool("helm"));
    command
        .args(["template", "portico", "--namespace", "portico"])
        .args(extra)
        .arg(deploy_dir().join("chart"));
    command
}

#[test]
fn the_helm_chart_renders_the_kustomize_base_object_by_object() {
    // The `helm test` hooks are the chart's own (kustomize has no tests).
    let chart = rendered(&mut helm_template(&["--include-crds", "--skip-tests"]));
    let by_name =
        |docs: &[DynamicObject]| -> std::collections::BTreeMap<String, serde_json::Value> {
            docs.iter()
                .map(|d| (name_of(d), serde_json::to_value(d).expect("JSON")))
                .collect()
        };
    let mut from_base = by_name(&kustomized("."));
    let from_chart = by_name(&chart);
    // Helm leaves the namespace to `helm install --create-namespace`.
    assert!(from_base.remove("Namespace/portico").is_some());
    assert_eq!(
        from_chart.keys().collect::<Vec<_>>(),
        from_base.keys().collect::<Vec<_>>()
    );
    for (name, object) in &from_base {
        assert_eq!(
            &from_chart[name], object,
            "{name} differs between the chart and the base"
        );
    }
}

#[test]
fn the_chart_names_the_oldest_supported_kubernetes() {
    let render_for = |version: &str| {
        helm_template(&["--kube-version", version])
            .output()
            .expect("helm runs")
    };
    let older = render_for("1.31.9");
    assert!(!older.status.success(), "the chart installs on 1.31");
    assert!(
        String::from_utf8_lossy(&older.stderr)
            .contains("chart requires kubeVersion: >=1.32.0-0 which is incompatible"),
        "{}",
        String::from_utf8_lossy(&older.stderr)
    );
    let oldest = render_for("1.32.0");
    assert!(
        oldest.status.success(),
        "{}",
        String::from_utf8_lossy(&oldest.stderr)
    );
}

#[test]
fn the_chart_wires_single_sign_on_and_says_what_is_missing() {
    let template = |sets: &[&str]| {
        let args: Vec<&str> = sets.iter().flat_map(|set| ["--set", *set]).collect();
        helm_template(&args)
    };
    let docs = rendered(&mut template(&[
        "portal.identity=oidc",
        "portal.oidc.issuer=https://sso.example.com/realms/platform",
        "portal.oidc.clientId=portico",
        "portal.oidc.redirectUrl=https://portico.example.com/auth/callback",
        "portal.oidc.clientSecret=portico-oidc",
        "portal.oidc.authParams=access_type=offline\\,prompt=consent",
    ]));
    let env = |name| portal_env(&docs, name);
    assert_eq!(env("PORTICO_IDENTITY").as_deref(), Some("oidc"));
    assert_eq!(
        env("PORTICO_OIDC_ISSUER").as_deref(),
        Some("https://sso.example.com/realms/platform")
    );
    assert_eq!(
        env("PORTICO_OIDC_AUTH_PARAMS").as_deref(),
        Some("access_type=offline,prompt=consent")
    );
    let secret_file = env("PORTICO_OIDC_CLIENT_SECRET_FILE").expect("secret file");
    let portal = docs
        .iter()
        .find(|d| kind(d) == "Deployment" && d.metadata.name.as_deref() == Some("portico"))
        .expect("the portal");
    let pod = &portal.data["spec"]["template"]["spec"];
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["secret"]["secretName"] == "portico-oidc")
        .expect("the client secret's volume");
    let mount = pod["containers"][0]["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == volume["name"])
        .expect("mounted");
    let mount_path = mount["mountPath"].as_str().expect("path");
    assert!(
        secret_file.starts_with(mount_path),
        "{secret_file} under {mount_path}"
    );

    let out = template(&["portal.identity=oidc"])
        .output()
        .expect("helm runs");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("portal.oidc.issuer is required with portal.identity=oidc")
    );
}

/// `helm test`: one Pod of Portico's own image checks the portal through its Service
/// (with the host it answers to) and the reconciler's Lease; its account may read that
/// Lease only; everything is a test hook, removed once it passes; `tests.enabled=false`
/// renders none.
#[test]
fn the_chart_tests_that_the_portal_answers_and_a_reconciler_leads() {
    let docs = rendered(&mut helm_template(&["--set", "portal.basePath=/portico"]));
    let hooks: Vec<&DynamicObject> = docs
        .iter()
        .filter(|d| {
            d.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("helm.sh/hook"))
                .is_some_and(|h| h == "test")
        })
        .collect();
    let mut names: Vec<String> = hooks.iter().map(|d| name_of(d)).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "NetworkPolicy/portico-test",
            "Pod/portico-test",
            "Role/portico-test",
            "RoleBinding/portico-test",
            "ServiceAccount/portico-test",
        ]
    );
    let role = hooks.iter().find(|d| kind(d) == "Role").expect("a Role");
    assert_eq!(
        role.data["rules"],
        serde_json::json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "resourceNames": ["portico-reconciler"], "verbs": ["get"]}])
    );
    let pod = hooks.iter().find(|d| kind(d) == "Pod").expect("a Pod");
    let container = &pod.data["spec"]["containers"][0];
    assert_eq!(
        container["args"],
        serde_json::json!([
            "--check",
            "answers=http://portico.portico.svc/portico/readyz",
            "--check",
            "lease=portico/portico-reconciler"
        ])
    );
    assert_eq!(container["image"], "ghcr.io/portico-dev/portico:0.1.0");
    assert_eq!(container["env"][0]["value"], "portico.example.com");
    assert_eq!(
        pod.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app.kubernetes.io/name"))
            .map(String::as_str),
        Some("portico-test"),
        "outside the portal's egress policy"
    );
    let without = rendered(&mut helm_template(&["--set", "tests.enabled=false"]));
    assert!(
        !without
            .iter()
            .any(|d| name_of(d).ends_with("/portico-test"))
    );
}

/// A ServiceMonitor, for a Prometheus Operator that selects those: a headless Service
/// over both Deployments' metrics ports, and the monitor naming it; none by default.
#[test]
fn the_chart_offers_a_service_monitor_over_both_metrics_ports() {
    let docs = rendered(&mut helm_template(&[
        "--set",
        "serviceMonitor.enabled=true",
        "--set",
        "serviceMonitor.labels.release=prometheus",
    ]));
    let service = docs
        .iter()
        .find(|d| name_of(d) == "Service/portico-metrics")
        .expect("the metrics Service");
    assert_eq!(service.data["spec"]["clusterIP"], "None");
    assert_eq!(
        service.data["spec"]["selector"],
        serde_json::json!({"app.kubernetes.io/name": "portico"})
    );
    assert_eq!(service.data["spec"]["ports"][0]["targetPort"], "metrics");
    let monitor = docs
        .iter()
        .find(|d| kind(d) == "ServiceMonitor")
        .expect("a ServiceMonitor");
    assert_eq!(
        monitor.data["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"],
        "metrics"
    );
    assert_eq!(
        monitor
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("release"))
            .map(String::as_str),
        Some("prometheus")
    );
    let plain = rendered(&mut helm_template(&[]));
    assert!(!plain.iter().any(|d| kind(d) == "ServiceMonitor"));
}

/// chart-testing's YAML lint of Chart.yaml and values.yaml (`ct lint` runs yamllint
/// with these rules; Debian's yamllint, installed with the test tools).
#[test]
fn the_charts_yaml_passes_yamllint() {
    let chart = deploy_dir().join("chart");
    let out = std::process::Command::new("yamllint")
        .arg("--strict")
        .arg("-c")
        .arg(deploy_dir().join("yamllint.yaml"))
        .arg(chart.join("Chart.yaml"))
        .arg(chart.join("values.yaml"))
        .output()
        .expect("yamllint runs (scripts/install.sh --for-tests installs it)");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The chart's README is what helm-docs writes from `values.yaml` and its comments:
/// a value added or changed without its line there fails here.
#[test]
fn the_chart_readme_is_written_from_its_values() {
    let script = deploy_dir().join("../scripts/chart-readme.sh");
    let out = std::process::Command::new("bash")
        .arg(script)
        .arg("--check")
        .output()
        .expect("chart-readme.sh runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The release and CI workflows cannot run here (no hosted runner); actionlint checks
/// their syntax, expressions, action inputs and job wiring.
#[test]
fn the_release_workflows_pass_actionlint() {
    let workflows = deploy_dir().join("../.github/workflows");
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&workflows)
        .expect("the workflows")
        .map(|entry| entry.expect("an entry").path())
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    let out = std::process::Command::new(crate::kit::tool("actionlint"))
        // shellcheck and pyflakes are not installed here; the rest is checked.
        .args(["-shellcheck=", "-pyflakes="])
        .args(&files)
        .output()
        .expect("actionlint runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_chart_passes_helm_lint_strict() {
    let out = std::process::Command::new(crate::kit::tool("helm"))
        .args(["lint", "--strict"])
        .arg(deploy_dir().join("chart"))
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_chart_refuses_values_it_does_not_know_and_drains_a_single_replica() {
    let template = |sets: &[&str]| {
        let args: Vec<&str> = sets.iter().flat_map(|set| ["--set", *set]).collect();
        helm_template(&args).output().expect("helm runs")
    };
    // A typo and a wrong type are refused by the schema, with the value named.
    for (set, said) in [
        (
            "portal.replica=1",
            "additional properties 'replica' not allowed",
        ),
        ("portal.replicas=two", "/portal/replicas"),
        ("portal.identity=ldap", "/portal/identity"),
        ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
    ] {
        let out = template(&[set]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{set} installs");
        assert!(stderr.contains(said), "{set}: {stderr}");
    }
    // One replica: no PodDisruptionBudget, which would block every drain.
    let budgets = |docs: &[DynamicObject]| {
        docs.iter()
            .filter(|d| kind(d) == "PodDisruptionBudget")
            .count()
    };
    assert_eq!(budgets(&rendered(&mut helm_template(&[]))), 1);
    let single = rendered(&mut helm_template(&["--set", "portal.replicas=1"]));
    assert_eq!(budgets(&single), 0);
    // Scheduling and pull secrets reach both Deployments' Pods.
    let placed = rendered(&mut helm_template(&[
        "--set",
        "scheduling.nodeSelector.pool=web",
        "--set",
        "imagePullSecrets[0]=regcred",
        "--set",
        "scheduling.tolerations[0].key=dedicated",
        "--set",
        "scheduling.tolerations[0].operator=Exists",
    ]));
    let pods: Vec<&serde_json::Value> = placed
        .iter()
        .filter(|d| kind(d) == "Deployment")
        .map(|d| &d.data["spec"]["template"]["spec"])
        .collect();
    assert_eq!(pods.len(), 2);
    for pod in pods {
        assert_eq!(pod["nodeSelector"]["pool"], "web");
        assert_eq!(pod["imagePullSecrets"][0]["name"], "regcred");
        assert_eq!(pod["tolerations"][0]["key"], "dedicated");
    }
}

#[test]
fn the_chart_serves_through_a_gateway_and_offers_a_pod_monitor_when_asked() {
    let kinds = |docs: &[DynamicObject]| -> Vec<String> {
        docs.iter().map(|d| kind(d).to_string()).collect()
    };
    let default = kinds(&rendered(&mut helm_template(&[])));
    assert!(default.iter().any(|k| k == "Ingress"));
    assert!(
        !default
            .iter()
            .any(|k| k == "HTTPRoute" || k == "PodMonitor")
    );

    let docs = rendered(&mut helm_template(&[
        "--set",
        "ingress.enabled=false",
        "--set",
        "httpRoute.enabled=true",
        "--set",
        "httpRoute.parentRefs[0].name=public",
        "--set",
        "httpRoute.parentRefs[0].namespace=gateways",
        "--set",
        "portal.basePath=/portico",
        "--set",
        "podMonitor.enabled=true",
        "--set",
        "podMonitor.labels.release=prometheus",
    ]));
    assert!(!kinds(&docs).iter().any(|k| k == "Ingress"));
    let route = docs
        .iter()
        .find(|d| kind(d) == "HTTPRoute")
        .expect("an HTTPRoute");
    assert_eq!(route.data["spec"]["parentRefs"][0]["name"], "public");
    assert_eq!(route.data["spec"]["hostnames"][0], "portico.example.com");
    let rule = &route.data["spec"]["rules"][0];
    assert_eq!(rule["matches"][0]["path"]["value"], "/portico");
    assert_eq!(rule["backendRefs"][0]["name"], "portico");
    let monitor = docs
        .iter()
        .find(|d| kind(d) == "PodMonitor")
        .expect("a PodMonitor");
    assert_eq!(
        monitor
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("release"))
            .map(String::as_str),
        Some("prometheus")
    );
    assert_eq!(
        monitor.data["spec"]["podMetricsEndpoints"][0]["port"],
        "metrics"
    );

    // A route on a host of its own: the portal answers to it too (it refuses names it
    // was not told, the DNS rebinding guard).
    let own_host = rendered(&mut helm_template(&[
        "--set",
        "httpRoute.enabled=true",
        "--set",
        "httpRoute.parentRefs[0].name=public",
        "--set",
        "httpRoute.hostname=gateway.example.com",
    ]));
    let portal = own_host
        .iter()
        .find(|d| name_of(d) == "Deployment/portico")
        .expect("the portal");
    let env = &portal.data["spec"]["template"]["spec"]["containers"][0]["env"];
    let allowed = env
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "PORTICO_ALLOWED_HOSTS")
        .map(|e| e["value"].clone());
    assert_eq!(
        allowed,
        Some(serde_json::json!("portico.example.com,gateway.example.com"))
    );

    // A route attached to nothing is refused with the value named.
    let out = helm_template(&["--set", "httpRoute.enabled=true"])
        .output()
        .expect("helm runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("httpRoute.parentRefs is required"));
}

fn portal_env(docs: &[DynamicObject], name: &str) -> Option<String> {
    let portal = docs
        .iter()
        .find(|d| kind(d) == "Deployment" && d.metadata.name.as_deref() == Some("portico"))?;
    portal.data["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str().map(str::to_string))
}

#[test]
fn the_portal_answers_to_its_ingress_host_and_reaches_only_dns_and_the_api_server() {
    for dir in [".", "overlays/local", "overlays/example"] {
        let docs = kustomized(dir);
        let ingress_hosts: Vec<&str> = docs
            .iter()
            .filter(|d| kind(d) == "Ingress")
            .flat_map(|d| d.data["spec"]["rules"].as_array().into_iter().flatten())
            .filter_map(|r| r["host"].as_str())
            .collect();
        let allowed = portal_env(&docs, "PORTICO_ALLOWED_HOSTS").expect("allowed hosts");
        for host in &ingress_hosts {
            assert!(
                allowed.split(',').any(|a| a == *host),
                "{dir}: {host} not in {allowed}"
            );
        }
        assert_eq!(
            portal_env(&docs, "PORTICO_FORWARDED_HOPS").as_deref(),
            Some("1"),
            "{dir}"
        );
        let egress = docs
            .iter()
            .find(|d| {
                kind(d) == "NetworkPolicy" && d.metadata.name.as_deref() == Some("portico-egress")
            })
            .expect("the egress policy");
        let selected = &egress.data["spec"]["podSelector"]["matchLabels"];
        let portico = |d: &&DynamicObject| {
            kind(d) == "Deployment"
                && matches!(
                    d.metadata.name.as_deref(),
                    Some("portico" | "portico-reconciler")
                )
        };
        assert_eq!(docs.iter().filter(portico).count(), 2, "{dir}");
        for deployment in docs.iter().filter(portico) {
            let labels = &deployment.data["spec"]["template"]["metadata"]["labels"];
            for (key, value) in selected.as_object().expect("labels") {
                assert_eq!(
                    &labels[key], value,
                    "{dir}: {:?} is not held to the egress policy",
                    deployment.metadata.name
                );
            }
        }
        let rules = egress.data["spec"]["egress"].as_array().expect("rules");
        let ports: Vec<u64> = rules
            .iter()
            .flat_map(|r| r["ports"].as_array().into_iter().flatten())
            .filter_map(|p| p["port"].as_u64())
            .collect();
        assert_eq!(ports, [53, 53, 443, 6443], "{dir}");
        let blocks: Vec<&serde_json::Value> = rules
            .iter()
            .flat_map(|r| r["to"].as_array().into_iter().flatten())
            .filter_map(|t| t.get("ipBlock"))
            .collect();
        for block in blocks {
            assert!(
                block["except"]
                    .as_array()
                    .is_some_and(|e| e.iter().any(|c| c == "169.254.0.0/16")),
                "{dir}: link-local (cloud metadata) reachable"
            );
        }
    }
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
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .collect();
    for file in &base {
        assert!(
            listed.contains(file),
            "{} is not in deploy/base/kustomization.yaml",
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

/// The admission policy's ceilings are the shipped catalog's: each a CEL map literal
/// built from the catalog, in its (sorted) order.
#[test]
fn the_admission_ceilings_are_the_catalogs() {
    let shipped =
        std::fs::read_to_string(deploy_dir().join("catalog/stacks.yaml")).expect("catalog");
    let catalog = Catalog::parse(&shipped).expect("parses");
    let literal = |pairs: Vec<String>| format!("{{{}}}", pairs.join(", "));
    let replicas = literal(
        catalog
            .entries
            .iter()
            .map(|(name, e)| format!("'{name}': {}", e.max_replicas))
            .collect(),
    );
    let storage = literal(
        catalog
            .entries
            .iter()
            .filter(|(_, e)| e.stateful)
            .map(|(name, e)| format!("'{name}': '{}'", e.max_storage))
            .collect(),
    );
    let resources = literal(
        catalog
            .entries
            .iter()
            .map(|(name, e)| {
                let ceilings = literal(
                    e.max_resources
                        .iter()
                        .map(|(k, v)| format!("'{k}': '{v}'"))
                        .collect(),
                );
                format!("'{name}': {ceilings}")
            })
            .collect(),
    );
    let policy = documents(&[deploy_dir().join("base/stack-policy.yaml")])
        .into_iter()
        .find(|d| {
            d.metadata.name.as_deref() == Some("portico-stack-ceilings")
                && kind(d) == "ValidatingAdmissionPolicy"
        })
        .expect("the ceilings policy");
    let variable = |name: &str| {
        policy.data["spec"]["variables"]
            .as_array()
            .and_then(|vars| vars.iter().find(|v| v["name"] == name))
            .and_then(|v| v["expression"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(variable("maxReplicas"), replicas);
    assert_eq!(variable("maxStorage"), storage);
    assert_eq!(variable("maxResources"), resources);
}

/// Portico's namespace, CRDs, ServiceAccounts and RBAC, applied for real.
async fn apply_rbac(client: &kube::Client) {
    let real: Vec<DynamicObject> = documents(&kustomization_files())
        .into_iter()
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
        .collect();
    apply::apply_all(client, real)
        .await
        .expect("namespace, CRD and RBAC apply");
}

/// Every manifest passes a server-side dry run. What the two accounts may do is proved
/// whole in [`rights`].
#[tokio::test]
async fn every_manifest_passes_a_server_side_dry_run() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let docs = documents(&kustomization_files());
    // Namespaced objects need their namespace to exist even in a dry run; the CRD
    // must be established for nothing else to refer to it.
    apply_rbac(&client).await;
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

/// A child of the Stack `stack-uid` as the catalog makes it (labelled, controlled),
/// with `changes` merged in.
fn stack_child(
    kind: &str,
    api_version: &str,
    ns: &str,
    changes: serde_json::Value,
) -> DynamicObject {
    let mut object = serde_json::json!({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": "db", "namespace": ns,
            "labels": {"portico.dev/stack": "db"},
            "ownerReferences": [{"apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
                "name": "db", "uid": "0d5e6c1a-0000-4000-8000-000000000001", "controller": true}]},
    });
    merge(&mut object, changes);
    serde_json::from_value(object).expect("object")
}

fn merge(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

/// A Deployment's spec as the catalog shapes one, with `pod` merged into its Pod.
fn workload(pod: serde_json::Value) -> serde_json::Value {
    let mut spec = serde_json::json!({"spec": {
        "selector": {"matchLabels": {"portico.dev/stack": "db"}},
        "template": {"metadata": {"labels": {"portico.dev/stack": "db"}},
            "spec": {"automountServiceAccountToken": false,
                "containers": [{"name": "app", "image": "docker.io/library/tomcat:10.1",
                    "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}}}});
    merge(&mut spec["spec"]["template"]["spec"], pod);
    spec
}

#[tokio::test]
async fn admission_lets_the_reconciler_write_only_a_stacks_own_children_in_their_shape() {
    use kube::api::{Api, PostParams};
    let admin = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let docs = documents(&kustomization_files());
    let policy: Vec<DynamicObject> = docs
        .iter()
        .filter(|d| {
            d.metadata.name.as_deref() == Some("portico-reconciler-writes")
                || matches!(
                    kind(d),
                    "Namespace" | "ServiceAccount" | "ClusterRole" | "ClusterRoleBinding"
                )
        })
        .cloned()
        .collect();
    apply::apply_all(&admin, policy)
        .await
        .expect("the policy applies");
    let team = crate::kit::fresh_namespace(&admin, "vap").await;
    let mut config = portico_server::cluster::config::config(
        Some(TestCluster::shared().admin_kubeconfig()),
        None,
    )
    .await
    .expect("admin config");
    config.auth_info.impersonate = Some("system:serviceaccount:portico:portico-reconciler".into());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        "system:authenticated".into(),
    ]);
    let reconciler = kube::Client::try_from(config).expect("client");
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let create = |object: DynamicObject| {
        let reconciler = reconciler.clone();
        let dry_run = dry_run.clone();
        async move {
            let types = object.types.clone().expect("types");
            let (group, version) = types
                .api_version
                .rsplit_once('/')
                .unwrap_or(("", &types.api_version));
            let resource = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                group,
                version,
                &types.kind,
            ));
            let ns = object.metadata.namespace.clone().expect("namespace");
            Api::<DynamicObject>::namespaced_with(reconciler, &ns, &resource)
                .create(&dry_run, &object)
                .await
        }
    };
    let secret = |ns: &str, changes| stack_child("Secret", "v1", ns, changes);
    let deployment = |ns: &str, pod| stack_child("Deployment", "apps/v1", ns, workload(pod));
    // The shape the catalog produces passes (the policy takes a moment to load; each
    // try is a dry run).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let refused = create(deployment("kube-system", serde_json::json!({})))
            .await
            .is_err();
        if refused {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the policy never loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // What the reconciler really makes (desired::desired) passes, for each choice.
    let catalog = portico_server::reconcile::catalog::Catalog::load(None).expect("catalog");
    for choice in ["mysql", "tomcat"] {
        let stack = portico_server::reconcile::stack::Stack {
            metadata: kube::api::ObjectMeta {
                name: Some("db".into()),
                namespace: Some(team.clone()),
                uid: Some("0d5e6c1a-0000-4000-8000-000000000001".into()),
                ..Default::default()
            },
            spec: portico_server::reconcile::stack::StackSpec {
                choice: choice.into(),
                replicas: 2,
                exposure: "NodePort".into(),
                ..Default::default()
            },
            status: None,
        };
        let entry = catalog.get(choice).expect("entry");
        let children = portico_server::reconcile::desired::desired(
            &stack,
            entry,
            portico_server::reconcile::desired::Passwords::placeholder("pw"),
        )
        .expect("children");
        let dynamic = |object: serde_json::Result<serde_json::Value>| -> DynamicObject {
            serde_json::from_value(object.expect("json")).expect("object")
        };
        let mut made = vec![dynamic(serde_json::to_value(&children.service))];
        made.extend(
            children
                .headless
                .iter()
                .map(|s| dynamic(serde_json::to_value(s))),
        );
        made.extend(
            children
                .secret
                .iter()
                .map(|s| dynamic(serde_json::to_value(s))),
        );
        made.push(dynamic(match &children.workload {
            portico_server::reconcile::desired::Workload::Stateful(set) => {
                serde_json::to_value(set)
            }
            portico_server::reconcile::desired::Workload::Stateless(d) => serde_json::to_value(d),
        }));
        for object in made {
            let what = format!(
                "{choice}: {}/{}",
                object
                    .types
                    .as_ref()
                    .map(|t| t.kind.clone())
                    .unwrap_or_default(),
                object.metadata.name.clone().unwrap_or_default()
            );
            create(object)
                .await
                .unwrap_or_else(|e| panic!("{what} as the reconciler makes it: {e}"));
        }
    }
    let refused: [(&str, DynamicObject, &str); 13] = [
        (
            "a Deployment in kube-system",
            deployment("kube-system", serde_json::json!({})),
            "system namespaces",
        ),
        (
            "a Secret in Portico's namespace",
            secret("portico", serde_json::json!({"type": "Opaque"})),
            "system namespaces",
        ),
        (
            "an unlabelled Secret",
            {
                let mut s = secret(&team, serde_json::json!({"type": "Opaque"}));
                s.metadata.labels = None;
                s
            },
            "labelled portico.dev/stack",
        ),
        (
            // Only a kept credentials Secret may be made without a controlling Stack.
            "a Service no Stack controls",
            {
                let mut s = stack_child(
                    "Service",
                    "v1",
                    &team,
                    serde_json::json!({"spec": {"selector": {"portico.dev/stack": "db"}, "ports": [{"port": 80}]}}),
                );
                s.metadata.owner_references = None;
                s
            },
            "controlled by a Stack",
        ),
        (
            "a service account token Secret",
            secret(
                &team,
                serde_json::json!({"type": "kubernetes.io/service-account-token",
                "metadata": {"annotations": {"kubernetes.io/service-account.name": "default"}}}),
            ),
            "Opaque",
        ),
        (
            "a privileged container",
            deployment(
                &team,
                serde_json::json!({"containers": [{"name": "app", "image": "x",
                "securityContext": {"allowPrivilegeEscalation": true, "privileged": true}}]}),
            ),
            "unprivileged",
        ),
        (
            "a hostPath volume",
            deployment(
                &team,
                serde_json::json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            ),
            "no volumes but scratch space",
        ),
        (
            "a Secret mounted as a volume",
            deployment(
                &team,
                serde_json::json!({"volumes": [{"name": "s", "secret": {"secretName": "portico-session"}}]}),
            ),
            "no volumes but scratch space",
        ),
        (
            "another Secret's key in the environment",
            deployment(
                &team,
                serde_json::json!({"containers": [{"name": "app", "image": "x",
                    "securityContext": {"allowPrivilegeEscalation": false},
                    "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "someone-else", "key": "k"}}}]}]}),
            ),
            "read no Secret but a Stack's password",
        ),
        (
            "another key of a Stack's credentials Secret",
            deployment(
                &team,
                serde_json::json!({"containers": [{"name": "app", "image": "x",
                    "securityContext": {"allowPrivilegeEscalation": false},
                    "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "other-credentials", "key": "root"}}}]}]}),
            ),
            "read no Secret but a Stack's password",
        ),
        (
            "a Stack's Deployment mounting someone's claim",
            deployment(
                &team,
                serde_json::json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "payments-data"}}]}),
            ),
            "their own Stack's claims",
        ),
        (
            "a Stack's Deployment mounting another Stack's claim",
            deployment(
                &team,
                serde_json::json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data-other-0"}}]}),
            ),
            "their own Stack's claims",
        ),
        (
            "a Service selecting another application's Pods",
            stack_child(
                "Service",
                "v1",
                &team,
                serde_json::json!({"spec": {"selector": {"app": "payments"}, "ports": [{"port": 80}]}}),
            ),
            "selects only its own Stack's Pods",
        ),
    ];
    // Changing or deleting what the reconciler did not make: someone's own Service
    // (taking it over) and Secret (which it may delete, by RBAC, but not this one).
    let theirs: k8s_openapi::api::core::v1::Secret = serde_json::from_value(
        serde_json::json!({"metadata": {"name": "theirs"}, "type": "Opaque"}),
    )
    .expect("secret");
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &theirs)
        .await
        .expect("someone's own Secret");
    let their_service: k8s_openapi::api::core::v1::Service =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "theirs"},
            "spec": {"selector": {"portico.dev/stack": "db"}, "ports": [{"port": 80}]}}))
        .expect("service");
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &their_service)
        .await
        .expect("someone's own Service");
    // A credentials Secret kept after its Stack was deleted: the reconciler made it
    // unowned, and may not delete it (its volumes' data needs it).
    let kept: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "kept-credentials", "labels": {"portico.dev/stack": "kept"}},
        "type": "Opaque"}))
    .expect("secret");
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &kept)
        .await
        .expect("a kept Secret");
    // One made before Stacks had an app user: its one password is root's.
    let old: k8s_openapi::api::core::v1::Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "old-credentials", "labels": {"portico.dev/stack": "old"}},
        "type": "Opaque", "data": {"password": "cm9vdA=="}}))
    .expect("secret");
    Api::<k8s_openapi::api::core::v1::Secret>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &old)
        .await
        .expect("an old Secret");
    let json_patch = |name: &str, ops: serde_json::Value| {
        let request = http::Request::patch(format!(
            "/api/v1/namespaces/{team}/secrets/{name}?dryRun=All"
        ))
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .body(serde_json::to_vec(&ops).expect("json"))
        .expect("request");
        let reconciler = reconciler.clone();
        async move { reconciler.request_text(request).await.map(|_| ()) }
    };
    let mysql = catalog.get("mysql").expect("mysql");
    json_patch(
        "old-credentials",
        portico_server::reconcile::desired::legacy_password_move(mysql, "app-pw").expect("a move"),
    )
    .await
    .expect("the reconciler's move of an old Secret's password is admitted");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(reconciler.clone(), &team);
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(reconciler.clone(), &team);
    let adopt = kube::api::Patch::Merge(serde_json::json!({"metadata": {
        "labels": {"portico.dev/stack": "db"},
        "ownerReferences": [{"apiVersion": "portico.dev/v1alpha1", "kind": "Stack", "name": "db",
            "uid": "0d5e6c1a-0000-4000-8000-000000000001", "controller": true}]}}));
    let dry_patch = kube::api::PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let dry_delete = kube::api::DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    // Someone's own Deployment, which a StackBinding may add variables to (under the
    // prefix it accepts) and nothing else; and one that accepts none.
    let theirs_plain: k8s_openapi::api::apps::v1::Deployment =
        serde_json::from_value(serde_json::json!({
        "metadata": {"name": "plain"},
        "spec": {"selector": {"matchLabels": {"app": "plain"}},
            "template": {"metadata": {"labels": {"app": "plain"}},
                "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}}}}))
        .expect("deployment");
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &theirs_plain)
        .await
        .expect("someone's Deployment that accepts no binding");
    let theirs_app: k8s_openapi::api::apps::v1::Deployment =
        serde_json::from_value(serde_json::json!({
        "metadata": {"name": "app", "annotations": {"portico.dev/binding-prefixes": "MYSQL_"}},
        "spec": {"selector": {"matchLabels": {"app": "app"}},
            "template": {"metadata": {"labels": {"app": "app"}},
                "spec": {"containers": [{"name": "app", "image": "example/app:1",
                    "env": [{"name": "OWN", "value": "mine"}]}]}}}}))
        .expect("deployment");
    Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(admin.clone(), &team)
        .create(&PostParams::default(), &theirs_app)
        .await
        .expect("someone's own Deployment");
    let apps: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(reconciler.clone(), &team);
    let as_binding = kube::api::PatchParams {
        dry_run: true,
        ..kube::api::PatchParams::apply("portico-binding.app-db").force()
    };
    let bound = |container: serde_json::Value, pod: serde_json::Value| {
        let mut spec = serde_json::json!({"containers": [container]});
        merge(&mut spec, pod);
        kube::api::Patch::Apply(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
            "spec": {"template": {"spec": spec}}}))
    };
    // Every variable a binding really writes, as the controller computes them.
    use portico_server::reconcile::binding::projection;
    let details = projection::Details {
        choice: "mysql".into(),
        host: format!("db.{team}.svc"),
        port: 3306,
        database: Some("app".into()),
        username: Some("app".into()),
        scheme: Some("mysql".into()),
        credentials: Some("db-credentials".into()),
    };
    let variables = serde_json::to_value(projection::variables("MYSQL_", &details)).expect("env");
    assert_eq!(variables.as_array().map(Vec::len), Some(8), "{variables}");
    apps.patch(
        "app",
        &as_binding,
        &bound(
            serde_json::json!({"name": "app", "env": variables}),
            serde_json::json!({}),
        ),
    )
    .await
    .expect("a binding's variables are admitted into someone's own Deployment");
    let changes = [
        (
            "taking over someone's Service",
            services
                .patch("theirs", &dry_patch, &adopt)
                .await
                .map(|_| ()),
            "adopts nothing",
        ),
        (
            "deleting someone's Secret",
            secrets.delete("theirs", &dry_delete).await.map(|_| ()),
            "labelled portico.dev/stack",
        ),
        (
            "a binding changing someone's image",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "image": "evil/app:1", "env": variables}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "a StackBinding changes only a workload's environment",
        ),
        (
            "a binding adding a volume to someone's Deployment",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": variables}),
                    serde_json::json!({"volumes": [{"name": "s", "secret": {"secretName": "portico-session"}}]}),
                ),
            )
            .await
            .map(|_| ()),
            "a StackBinding changes only a workload's environment",
        ),
        (
            "a binding annotating someone's Pods",
            apps.patch(
                "app",
                &as_binding,
                &kube::api::Patch::Apply(serde_json::json!({
                    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "app"},
                    "spec": {"template": {"metadata": {"annotations": {
                        "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}}}})),
            )
            .await
            .map(|_| ()),
            "a StackBinding changes only a workload's environment",
        ),
        (
            "a binding handing someone's Deployment another Secret",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "TOKEN",
                        "valueFrom": {"secretKeyRef": {"name": "portico-session", "key": "key"}}}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "a StackBinding changes only a workload's environment",
        ),
        (
            "a binding setting NODE_OPTIONS (a debugger open to the network)",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "NODE_OPTIONS",
                        "value": "--inspect=0.0.0.0:9229"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "only its own variables",
        ),
        (
            "a binding setting a JAVA_TOOL_OPTIONS jdwp agent",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "JAVA_TOOL_OPTIONS",
                        "value": "-agentlib:jdwp=transport=dt_socket,server=y,address=*:5005"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "only its own variables",
        ),
        (
            "a binding pointing the app's API client elsewhere (KUBERNETES_SERVICE_HOST)",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "KUBERNETES_SERVICE_HOST",
                        "value": "evil.example"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "only its own variables",
        ),
        (
            "a binding changing the app's own variable",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "OWN", "value": "theirs"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "only its own variables",
        ),
        (
            "a binding's variables into a Deployment that accepts none",
            apps.patch(
                "plain",
                &as_binding,
                &kube::api::Patch::Apply(serde_json::json!({
                    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "plain"},
                    "spec": {"template": {"spec": {"containers": [
                        {"name": "app", "env": variables}]}}}})),
            )
            .await
            .map(|_| ()),
            "under a prefix the workload accepts",
        ),
        (
            "a binding's variables under a prefix the Deployment does not accept (CACHE_HOST)",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "CACHE_HOST",
                        "value": "evil.example"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "under a prefix the workload accepts",
        ),
        (
            "a binding's URL reading the app's own variable ($(OWN), expanded by the kubelet)",
            apps.patch(
                "app",
                &as_binding,
                &bound(
                    serde_json::json!({"name": "app", "env": [{"name": "MYSQL_URL",
                        "value": "mysql://$(OWN)@evil.example/"}]}),
                    serde_json::json!({}),
                ),
            )
            .await
            .map(|_| ()),
            "under a prefix the workload accepts",
        ),
        (
            "a binding accepting variables for itself (the Deployment's annotation)",
            apps.patch(
                "app",
                &dry_patch,
                &kube::api::Patch::Merge(serde_json::json!({"metadata": {"annotations":
                    {"portico.dev/binding-prefixes": "MYSQL_,CACHE_"}}})),
            )
            .await
            .map(|_| ()),
            "only a workload's environment",
        ),
        (
            "a binding pausing someone's Deployment",
            apps.patch(
                "app",
                &dry_patch,
                &kube::api::Patch::Merge(serde_json::json!({"spec": {"paused": true}})),
            )
            .await
            .map(|_| ()),
            "only a workload's environment",
        ),
        (
            "a binding annotating someone's Deployment",
            apps.patch(
                "app",
                &dry_patch,
                &kube::api::Patch::Merge(
                    serde_json::json!({"metadata": {"annotations": {"evil": "yes"}}}),
                ),
            )
            .await
            .map(|_| ()),
            "only a workload's environment",
        ),
        (
            "a binding switching someone's Deployment to Recreate",
            apps.patch(
                "app",
                &dry_patch,
                &kube::api::Patch::Merge(
                    serde_json::json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}}),
                ),
            )
            .await
            .map(|_| ()),
            "only a workload's environment",
        ),
        (
            "moving root's old password to the app user's key",
            json_patch(
                "old-credentials",
                serde_json::json!([
                    {"op": "move", "from": "/data/password", "path": "/data/app-password"},
                    {"op": "add", "path": "/data/admin-password", "value": "eA=="}]),
            )
            .await,
            "only to move its one old password",
        ),
        (
            "annotating an old Secret while moving its password",
            json_patch(
                "old-credentials",
                serde_json::json!([
                    {"op": "move", "from": "/data/password", "path": "/data/admin-password"},
                    {"op": "add", "path": "/data/app-password", "value": "eA=="},
                    {"op": "add", "path": "/metadata/annotations", "value": {"evil": "yes"}}]),
            )
            .await,
            "only to move its one old password",
        ),
        (
            "rewriting a kept Secret's passwords",
            secrets
                .patch(
                    "kept-credentials",
                    &dry_patch,
                    &kube::api::Patch::Merge(
                        serde_json::json!({"data": {"app-password": "eA==", "admin-password": "eA=="}}),
                    ),
                )
                .await
                .map(|_| ()),
            "only to move its one old password",
        ),
        (
            "deleting a kept credentials Secret",
            secrets
                .delete("kept-credentials", &dry_delete)
                .await
                .map(|_| ()),
            "controlled by a Stack",
        ),
    ];
    for (what, outcome, says) in changes {
        match outcome {
            Err(kube::Error::Api(status)) => assert!(
                status.code == 403 && status.message.contains(says),
                "{what}: {}",
                status.message
            ),
            other => panic!("{what} was not refused: {other:?}"),
        }
    }
    for (what, object, says) in refused {
        match create(object).await {
            Err(kube::Error::Api(status)) => assert!(
                status.code == 403 && status.message.contains(says),
                "{what}: {}",
                status.message
            ),
            other => panic!("{what} was not refused: {other:?}"),
        }
    }
}
