//! The real-world CRD corpus (end2end/crd-corpus: CRDs from the projects' own Go
//! modules) against a real kube-apiserver and Portico's server-side rendering: every
//! served version of every CRD gives a form, its sample passes the form's validation
//! and the API server's dry run, a round trip through the form changes nothing, and
//! the create and edit pages render (how long each took is printed, not asserted).
//! Also: schemas built to be hostile (deep, wide) cannot take the server down.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use portico_control_plane::cluster::TestCluster;
use portico_control_plane::{apply, corpus};
use portico_core::resource::ResourceRef;
use portico_core::schema::draft::Draft;
use portico_core::schema::form::spec_form;
use portico_core::schema::openapi::Schema;
use portico_core::schema::text::retyped;
use portico_core::schema::validate::validate;
use portico_server::web::backend::objects;
use serde_json::{Value, json};

/// How long a page request may go unanswered before the test gives up: a wait for a
/// render that never ends, not a budget (the widest schema's 2 MB form took 3.8 s
/// alone and 6.1 s beside the corpus test; the times are printed with every run).
const PAGE_WAIT: Duration = Duration::from_secs(120);

/// An HTTP client that gives up on a page after [`PAGE_WAIT`].
fn page_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(PAGE_WAIT)
        .build()
        .expect("http")
}

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/crd-corpus")
}

fn api(client: &kube::Client, entry: &corpus::Entry, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(&entry.group, version, &entry.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &entry.plural);
    match &entry.sample_namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// What the API server adds to an object that a person never typed.
fn as_typed(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "managedFields",
            "creationTimestamp",
            "generation",
            "resourceVersion",
            "uid",
        ] {
            meta.remove(key);
        }
    }
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    object
}

async fn load_corpus(client: &kube::Client) -> corpus::Corpus {
    let corpus = corpus::load(&corpus_dir()).expect("the corpus loads from the module cache");
    apply::apply_all(client, corpus.objects())
        .await
        .expect("the corpus CRDs and samples apply");
    corpus
}

/// Every corpus CRD's column of the creation time, whatever its description says
/// (cert-manager's quotes the field's documentation, Argo Rollouts' says "Time since
/// resource was created"), reaches the page as the creation time, which the page
/// counts the age from as kubectl would print it now. The API server's own cell is
/// an age as of the list: shown as sent, it would stand still.
#[tokio::test]
async fn every_corpus_creation_age_column_carries_the_creation_time() {
    use portico_core::live::protocol::TableChange;
    use portico_core::table::wire::TableQuery;
    use portico_server::live::budgets::limits::LiveLimits;
    use portico_server::live::feeds::hub::WatchHub;
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let corpus = load_corpus(&client).await;
    let kinds = crate::kit::kinds(&client).await;
    let hub = WatchHub::bounded(
        client.clone(),
        Duration::from_millis(200),
        &LiveLimits::default(),
        kinds.clone(),
    );
    let mut checked = Vec::new();
    for entry in &corpus.entries {
        for version in &entry.versions {
            let label = format!("{} {version}", entry.name);
            let ages = until_registry(&kinds, |k| {
                k.creation_age_columns(&entry.group, &entry.plural, version)
            })
            .await;
            if ages.is_empty() {
                continue;
            }
            let sample = api(&client, entry, version)
                .get(&entry.sample_name)
                .await
                .unwrap_or_else(|e| panic!("{label}: reading the sample: {e}"));
            // As the API server writes it (RFC 3339, seconds, UTC).
            let created =
                serde_json::to_value(&sample.metadata.creation_timestamp).expect("time JSON");
            assert!(
                created.is_string(),
                "{label}: the sample has no creation time"
            );
            let query = TableQuery {
                group: entry.group.clone(),
                version: version.clone(),
                plural: entry.plural.clone(),
                namespace: entry.sample_namespace.clone(),
                label_selector: None,
                field_selector: None,
                columns: None,
            };
            let mut view = hub.subscribe(query).expect("within limits");
            let update = tokio::time::timeout(Duration::from_secs(30), view.next())
                .await
                .unwrap_or_else(|_| panic!("{label}: no table within 30 s"))
                .expect("the feed goes on");
            let TableChange::Snapshot(table) = update.change else {
                panic!(
                    "{label}: the first update is not the table: {:?}",
                    update.change
                );
            };
            let row = table
                .rows
                .iter()
                .find(|r| r.name == entry.sample_name)
                .unwrap_or_else(|| panic!("{label}: the sample is not in the table"));
            for name in &ages {
                let at = table
                    .columns
                    .iter()
                    .position(|c| &c.name == name)
                    .unwrap_or_else(|| panic!("{label}: no column {name}"));
                assert_eq!(table.columns[at].kind, "date", "{label}: {name}");
                assert_eq!(row.cells[at], created, "{label}: {name}");
            }
            checked.push(entry.name.clone());
        }
    }
    // Descriptions of their own among them (the case the description alone missed),
    // and a CRD without printer columns, which the API server gives its own Age.
    for name in [
        "certificaterequests.cert-manager.io",
        "rollouts.argoproj.io",
        "prometheuses.monitoring.coreos.com",
        "servicemonitors.monitoring.coreos.com",
    ] {
        assert!(checked.iter().any(|c| c == name), "{name} was not checked");
    }
}

/// (milliseconds, page) of each render, slowest first.
fn worst(mut timings: Vec<(u128, String)>, n: usize) -> Vec<(u128, String)> {
    timings.sort_by_key(|t| std::cmp::Reverse(t.0));
    timings.truncate(n);
    timings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_corpus_crd_gives_a_form_its_sample_passes_and_a_round_trip_changes_nothing() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let corpus = load_corpus(&client).await;
    let projects: std::collections::HashSet<&str> =
        corpus.entries.iter().map(|e| e.project.as_str()).collect();
    assert!(corpus.entries.len() >= 25 && projects.len() >= 10);
    let (origin, state) = crate::kit::serve(&client, None).await;
    let http = page_client();
    let mut timings = Vec::new();
    let mut pages = 0;
    for entry in &corpus.entries {
        for version in &entry.versions {
            let label = format!("{} {version}", entry.name);
            let schema = Schema::from_value(&entry.schema(version));
            let form = spec_form(&schema);
            let object = api(&client, entry, version)
                .get(&entry.sample_name)
                .await
                .unwrap_or_else(|e| panic!("{label}: reading the sample: {e}"));
            let object = as_typed(serde_json::to_value(&object).expect("object JSON"));

            // The form's own validation accepts what the API server accepted.
            let errors = validate(&schema, &object, "");
            assert_eq!(errors, vec![], "{label}: the form refuses the sample");

            // Object → form → object changes nothing.
            let draft = Draft::edit(object.clone(), entry.namespaced);
            assert_eq!(
                draft.body(),
                object,
                "{label}: the draft changed the object"
            );
            let through_form = json!({ "spec": retyped(&form, &object["spec"]) });
            assert_eq!(
                through_form["spec"], object["spec"],
                "{label}: typing the sample back into the form changed it"
            );
            let mut again = draft.clone();
            again.apply_yaml(&draft.to_yaml()).expect("own YAML");
            assert_eq!(again.body(), object, "{label}: the YAML view changed it");

            // What the create page would send passes the API server's dry run.
            let mut create = Draft::create(
                object["apiVersion"].as_str().unwrap_or_default(),
                &entry.kind,
                entry.namespaced,
                entry.sample_namespace.as_deref().unwrap_or_default(),
                object["spec"].clone(),
            );
            create.set_name("dry-run-copy");
            if let Some(labels) = object.pointer("/metadata/labels") {
                create.object["metadata"]["labels"] = labels.clone();
            }
            let body: DynamicObject = serde_json::from_value(create.body()).expect("object");
            objects::create(&client, &state.kinds, &body, true)
                .await
                .unwrap_or_else(|e| panic!("{label}: dry run refused: {e}"));

            // The create and edit pages render on the server.
            let resource = ResourceRef {
                group: entry.group.clone(),
                version: version.clone(),
                plural: entry.plural.clone(),
            };
            let namespace = entry.sample_namespace.as_deref().unwrap_or("_");
            for page in [
                format!("{}/new", resource.page_path()),
                format!(
                    "{}/{namespace}/{}/edit",
                    resource.page_path(),
                    entry.sample_name
                ),
            ] {
                let started = Instant::now();
                let response = http
                    .get(format!("{origin}{page}"))
                    .send()
                    .await
                    .expect("page answers");
                let status = response.status();
                let html = response.text().await.expect("page body");
                let took = started.elapsed();
                assert_eq!(status, 200, "{page}");
                assert!(html.contains("object-form"), "{page}: no form rendered");
                timings.push((took.as_millis(), page));
                pages += 1;
            }
        }
    }
    let mut all: Vec<u128> = timings.iter().map(|t| t.0).collect();
    all.sort_unstable();
    println!(
        "{} CRDs from {} projects, {pages} pages rendered server-side: median {} ms, worst five:",
        corpus.entries.len(),
        projects.len(),
        all.get(all.len() / 2).copied().unwrap_or_default()
    );
    for (ms, page) in worst(timings, 5) {
        println!("  {ms:>5} ms  {page}");
    }
}

/// A CRD whose spec nests `depth` objects, each also holding `width` strings, every
/// level required (so a form would open all of it).
fn nested_crd(name: &str, depth: usize, width: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for level in (0..depth).rev() {
        let mut properties = serde_json::Map::new();
        properties.insert("next".into(), schema);
        for i in 0..width {
            properties.insert(
                format!("field{i}"),
                json!({"type": "string", "pattern": "^[a-z]+$", "description": "A field."}),
            );
        }
        schema = json!({
            "type": "object",
            "description": format!("Level {level}."),
            "required": ["next"],
            "properties": properties,
        });
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{name}s.hostile.test")},
        "spec": {
            "group": "hostile.test",
            "scope": "Cluster",
            "names": {"plural": format!("{name}s"), "singular": name, "kind": name.to_uppercase(), "listKind": format!("{}List", name.to_uppercase())},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}
            }]
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_and_wide_schemas_render_without_taking_the_server_down() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    // The one that overflowed the server's stack was 10 levels and ~330 nodes. (Past
    // about 60 levels a CRD's JSON is deeper than kube's JSON parser accepts at all.)
    let crds = [
        nested_crd("deepten", 10, 32),
        nested_crd("deepforty", 40, 4),
        nested_crd("wideone", 2, 2500),
    ];
    let objects: Vec<DynamicObject> = crds
        .iter()
        .map(|c| serde_json::from_value(c.clone()).expect("CRD"))
        .collect();
    apply::apply_all(&client, objects)
        .await
        .expect("CRDs apply");
    let (origin, _state) = crate::kit::serve(&client, None).await;
    let http = page_client();
    for plural in ["deeptens", "deepfortys", "wideones"] {
        let page = format!("{origin}/r/hostile.test/v1/{plural}/new");
        let started = Instant::now();
        let response = http.get(&page).send().await.expect("the server is up");
        assert_eq!(response.status(), 200, "{plural}");
        let html = response.text().await.expect("body");
        println!(
            "{plural}: {} ms, {} bytes",
            started.elapsed().as_millis(),
            html.len()
        );
        assert!(html.contains("object-form"), "{plural}: no form");
    }
    // Past the form's depth, the rest is a YAML editor.
    let deep = http
        .get(format!("{origin}/r/hostile.test/v1/deepfortys/new"))
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("body");
    assert!(deep.contains("Nested too deeply for a form"));
    assert_eq!(
        http.get(format!("{origin}/healthz"))
            .send()
            .await
            .expect("alive")
            .status(),
        200
    );
}

/// Sends `request` as the admin and returns the body, without decoding it (hostile
/// CRDs are deeper than kube's JSON decoding accepts). A conflict (left from an
/// earlier run) and a missing object count as done.
async fn raw(client: &kube::Client, request: axum::http::Request<Vec<u8>>) {
    match client.request_text(request).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 || status.code == 404 => {}
        Err(e) => panic!("raw request: {e}"),
    }
}

async fn create_crd(client: &kube::Client, crd: &Value) {
    let request =
        axum::http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(crd).expect("JSON"))
            .expect("request");
    raw(client, request).await;
}

async fn delete_crd(client: &kube::Client, name: &str) {
    let request = axum::http::Request::delete(format!(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    ))
    .body(Vec::new())
    .expect("request");
    raw(client, request).await;
}

/// Waits (on the registry's own change signal) until `found` says yes.
async fn until_registry<T>(
    kinds: &portico_server::cluster::registry::KindRegistry,
    found: impl Fn(&portico_server::cluster::registry::KindRegistry) -> Option<T>,
) -> T {
    let mut changes = kinds.changes();
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(it) = found(kinds) {
                return it;
            }
            changes.changed().await.expect("the registry runs");
        }
    })
    .await
    .expect("the registry saw the change within 30 s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_too_deep_to_decode_is_listed_with_its_reason_and_the_rest_load() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    // 70 levels of `properties`: about 140 levels of JSON, past serde_json's 128.
    let mut crd = nested_crd("abyss", 70, 0);
    crd["spec"]["scope"] = json!("Namespaced");
    crd["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Depth", "type": "string", "jsonPath": ".spec.next.next"}]);
    create_crd(&client, &crd).await;
    let (origin, state) = crate::kit::serve(&client, None).await;
    let listed = until_registry(&state.kinds, |k| {
        k.crds()
            .into_iter()
            .find(|c| c.name == "abysss.hostile.test" && c.established)
    })
    .await;
    let reason = listed.problem.expect("the CRD says why it is partial");
    assert!(reason.contains("recursion limit"), "{reason}");
    // The others loaded with it; the portal is ready; the kind's objects are a table.
    assert!(state.kinds.lookup("portico.dev", "stacks").is_some());
    assert!(state.kinds.lookup("hostile.test", "abysss").is_some());
    let http = reqwest::Client::new();
    let ready = http
        .get(format!("{origin}/readyz"))
        .send()
        .await
        .expect("up");
    assert_eq!(ready.status(), 200);
    let home = http
        .get(format!("{origin}/crds"))
        .send()
        .await
        .expect("up")
        .text()
        .await
        .expect("body");
    assert!(
        home.contains("could not read this definition"),
        "no reason on the list"
    );
    let table = http
        .get(format!(
            "{origin}/r/hostile.test/v1/abysss?namespace=default"
        ))
        .send()
        .await
        .expect("up");
    assert_eq!(table.status(), 200);
    let columns = state
        .kinds
        .printer_columns("hostile.test", "abysss", "v1")
        .expect("columns");
    assert_eq!(
        columns.len(),
        1,
        "the printer column is read from the outline"
    );
    assert_eq!(columns[0].name, "Depth");
    delete_crd(&client, "abysss.hostile.test").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_in_a_kubernetes_group_does_not_stand_in_for_the_built_in_kind() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    // Another version than the built-in v1: the aggregator then serves this one
    // beside it, and the built-in Ingress is untouched for every other test.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ingresses.networking.k8s.io",
                     "annotations": {"api-approved.kubernetes.io": "unapproved, a hostile test"}},
        "spec": {
            "group": "networking.k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "ingresses", "singular": "ingress", "kind": "Ingress", "listKind": "IngressList"},
            "versions": [{
                "name": "v1alpha9", "served": true, "storage": true,
                "additionalPrinterColumns": [{"name": "Hostile", "type": "string", "jsonPath": ".spec.x"}],
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    });
    create_crd(&client, &crd).await;
    let kinds = crate::kit::kinds(&client).await;
    let listed = until_registry(&kinds, |k| {
        k.crds()
            .into_iter()
            .find(|c| c.name == "ingresses.networking.k8s.io")
    })
    .await;
    let reason = listed.problem.expect("the CRD says it is ignored");
    assert!(reason.contains("Kubernetes itself serves"), "{reason}");
    let ingress = kinds
        .lookup("networking.k8s.io", "ingresses")
        .expect("the built-in kind");
    assert!(ingress.flags.builtin, "{ingress:?}");
    assert!(ingress.versions.contains(&"v1".to_string()));
    assert_eq!(
        kinds.printer_columns("networking.k8s.io", "ingresses", "v1alpha9"),
        None
    );
    assert!(
        kinds
            .form_spec("networking.k8s.io", "ingresses", "v1alpha9")
            .is_none()
    );
    delete_crd(&client, "ingresses.networking.k8s.io").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_children_view_looks_in_a_bounded_set_of_kinds_nearest_the_owner_first() {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let plain = |plural: &str, group: &str| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": plural, "kind": plural.trim_end_matches('s').to_uppercase()},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        })
    };
    // Many CRDs sorting before the owner's group, and one beside the owner.
    let mut crds: Vec<Value> = (0..6)
        .map(|i| plain(&format!("fars{i}"), "aaa.crowd.test"))
        .collect();
    crds.push(plain("kins", "near.test"));
    crds.push(plain("owners", "near.test"));
    let objects: Vec<DynamicObject> = crds
        .iter()
        .map(|c| serde_json::from_value(c.clone()).expect("CRD"))
        .collect();
    apply::apply_all(&client, objects)
        .await
        .expect("CRDs apply");
    let kinds = crate::kit::kinds(&client).await;
    let looked = until_registry(&kinds, |k| {
        let all: Vec<String> = k
            .child_kinds("near.test", usize::MAX)
            .into_iter()
            .map(|c| c.resource.plural)
            .collect();
        let every = ["kins", "owners", "fars0", "fars5"]
            .iter()
            .all(|p| all.contains(&p.to_string()));
        every.then(|| k.child_kinds("near.test", 11))
    })
    .await;
    let names: Vec<String> = looked
        .iter()
        .map(|k| format!("{}.{}", k.resource.plural, k.resource.group))
        .collect();
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(names.contains(&"pods.".to_string()), "{names:?}");
    assert!(names.contains(&"kins.near.test".to_string()), "{names:?}");
    assert!(names.contains(&"owners.near.test".to_string()), "{names:?}");
    assert!(
        !names.iter().any(|n| n.ends_with("crowd.test")),
        "{names:?}"
    );
    for crd in &crds {
        delete_crd(&client, crd["metadata"]["name"].as_str().expect("name")).await;
    }
}
