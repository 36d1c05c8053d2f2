//! The watch hub against a real kube-apiserver: one upstream watch per query shared
//! by every viewer, a snapshot then ordered deltas, kubectl's columns.
use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use portico_control_plane::apply;
use portico_control_plane::cluster::TestCluster;
use portico_core::live::protocol::TableChange;
use portico_core::table::state::TableState;
use portico_core::table::wire::{TableQuery, TableSnapshot};
use portico_server::live::feeds::hub::WatchHub;
use portico_server::live::feeds::subscription::Subscription;
use portico_server::live::upstream::table_api;

const WAIT: Duration = Duration::from_secs(10);

fn seeds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/fixtures/seeds")
}

async fn client_with_seed_crds() -> kube::Client {
    let client = TestCluster::shared()
        .admin_client()
        .await
        .expect("admin client");
    let mut crds = Vec::new();
    for file in apply::manifest_files(&seeds_dir()).expect("seeds") {
        if file.to_string_lossy().ends_with("-crd.yaml") {
            crds.extend(apply::read_documents(&file).expect("seed YAML"));
        }
    }
    apply::apply_all(&client, crds)
        .await
        .expect("seed CRDs apply");
    client
}

/// A namespace of the test's own, so tests never see each other's objects.
fn ats_api(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let resource = kube::discovery::ApiResource {
        group: "cnat.study.jayground8".into(),
        version: "v1alpha1".into(),
        api_version: "cnat.study.jayground8/v1alpha1".into(),
        kind: "At".into(),
        plural: "ats".into(),
    };
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// The live table of `ns`'s `At` objects.
fn ats_query(ns: &str) -> TableQuery {
    TableQuery {
        group: "cnat.study.jayground8".into(),
        version: "v1alpha1".into(),
        plural: "ats".into(),
        namespace: Some(ns.to_string()),
        label_selector: None,
        field_selector: None,
        columns: None,
    }
}

fn at(name: &str) -> DynamicObject {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "cnat.study.jayground8/v1alpha1",
        "kind": "At",
        "metadata": {"name": name},
        "spec": {"schedule": "2030-01-01T00:00:00Z", "command": "echo hi"}
    }))
    .expect("At object")
}

/// Reads the next update, applying it to `state`.
async fn next_into(sub: &mut Subscription, state: &mut TableState) {
    let update = tokio::time::timeout(WAIT, sub.next())
        .await
        .expect("an update in time")
        .expect("the feed goes on");
    match update.change {
        TableChange::Snapshot(snapshot) | TableChange::Partial(snapshot) => {
            *state = TableState::from_snapshot(snapshot)
        }
        TableChange::Rows { rows, .. } => state.extend(rows),
        TableChange::Delta(delta) => state.apply(delta),
        TableChange::Problem(p) | TableChange::Ended(p) => panic!("feed problem: {p}"),
    }
}

/// The next change, in time.
async fn next(sub: &mut Subscription) -> TableChange {
    tokio::time::timeout(WAIT, sub.next())
        .await
        .expect("an update in time")
        .expect("the feed goes on")
        .change
}

/// Reads updates until `done(state)` holds.
async fn until(sub: &mut Subscription, state: &mut TableState, done: impl Fn(&TableState) -> bool) {
    while !done(state) {
        next_into(sub, state).await;
    }
}

fn phase_of(state: &TableState, name: &str) -> Option<serde_json::Value> {
    let phase = state.columns.iter().position(|c| c.name == "phase")?;
    let row = state
        .view("", None, true, 0)
        .into_iter()
        .find(|r| r.name == name)?;
    row.cells.get(phase).cloned()
}

#[tokio::test]
async fn viewers_share_one_watch_and_see_create_status_change_and_delete() {
    let client = client_with_seed_crds().await;
    let ns = crate::kit::fresh_namespace(&client, "live").await;
    let hub = WatchHub::new(client.clone(), Duration::from_millis(200));
    let query = ats_query(&ns);
    let mut viewers: Vec<(Subscription, TableState)> = (0..3)
        .map(|_| {
            (
                hub.subscribe(query.clone())
                    .expect("within the hub's limits"),
                TableState::default(),
            )
        })
        .collect();
    assert_eq!(
        hub.upstream_watches(),
        1,
        "three viewers, one upstream watch"
    );
    for (sub, state) in &mut viewers {
        until(sub, state, |s| !s.columns.is_empty()).await;
        let names: Vec<&str> = state.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["Name", "schedule", "command", "phase"]);
    }

    let ats = ats_api(&client, &ns);
    ats.create(&PostParams::default(), &at("backup"))
        .await
        .expect("create At");
    for (sub, state) in &mut viewers {
        until(sub, state, |s| {
            s.view("", None, false, 0)
                .iter()
                .any(|r| r.name == "backup")
        })
        .await;
        assert_eq!(
            phase_of(state, "backup"),
            Some(serde_json::Value::Null),
            "no phase yet: a null cell (kubectl prints nothing)"
        );
    }

    // The phase column reads .status.phase: a status update shows up as a changed cell.
    ats.patch_status(
        "backup",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"phase": "RUNNING"}})),
    )
    .await
    .expect("patch status");
    for (sub, state) in &mut viewers {
        until(sub, state, |s| {
            phase_of(s, "backup") == Some("RUNNING".into())
        })
        .await;
    }

    ats.delete("backup", &DeleteParams::default())
        .await
        .expect("delete");
    for (sub, state) in &mut viewers {
        until(sub, state, TableState::is_empty).await;
    }

    // A late viewer starts from a snapshot equal to the others' state.
    ats.create(&PostParams::default(), &at("late"))
        .await
        .expect("create At");
    let (first, state0) = &mut viewers[0];
    until(first, state0, |s| s.len() == 1).await;
    let mut late = hub
        .subscribe(query.clone())
        .expect("within the hub's limits");
    let mut state = TableState::default();
    until(&mut late, &mut state, |s| s.len() == 1).await;
    assert_eq!(hub.upstream_watches(), 1);

    drop(late);
    drop(viewers);
    assert!(
        hub.wait_upstream_watches(0, WAIT).await,
        "the upstream watch stops after its last viewer leaves"
    );
}

/// The cells of `name`'s row in the columns named `columns`, as text.
fn cells_of(state: &TableState, name: &str, columns: &[&str]) -> Vec<serde_json::Value> {
    let rows = state.view("", None, true, 0);
    let Some(row) = rows.into_iter().find(|r| r.name == name) else {
        return Vec::new();
    };
    columns
        .iter()
        .map(|column| {
            state
                .columns
                .iter()
                .position(|c| c.name == *column)
                .and_then(|i| row.cells.get(i).cloned())
                .unwrap_or(serde_json::Value::Null)
        })
        .collect()
}

/// Added columns: kubectl's `-o custom-columns` spec read as kubectl reads it (the
/// same text kubectl prints, asked of kubectl in the same test), live as status
/// changes, a bad path saying why in its column alone, and a table with other
/// columns a watch of its own.
#[tokio::test]
async fn added_columns_print_what_kubectl_custom_columns_prints_and_stay_live() {
    let client = client_with_seed_crds().await;
    let ns = crate::kit::fresh_namespace(&client, "added").await;
    let ats = ats_api(&client, &ns);
    ats.create(&PostParams::default(), &at("nightly"))
        .await
        .expect("create At");
    let spec = r#"WHEN:.spec.schedule,PHASE:{.status.phase},WHO:metadata.name,KEYS:.metadata.labels.app\.kubernetes\.io/name"#;
    let bad = "BAD:.spec[?(@.a ==)]";
    let hub = WatchHub::new(client.clone(), Duration::from_millis(200));
    let mut plain = hub.subscribe(ats_query(&ns)).expect("plain table");
    let mut sub = hub
        .subscribe(TableQuery {
            columns: Some(format!("{spec},{bad}")),
            ..ats_query(&ns)
        })
        .expect("table with added columns");
    assert_eq!(hub.upstream_watches(), 2, "other columns, another watch");
    let mut state = TableState::default();
    until(&mut sub, &mut state, |s| s.len() == 1).await;
    let names: Vec<&str> = state.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Name", "schedule", "command", "phase", "WHEN", "PHASE", "WHO", "KEYS", "BAD"
        ]
    );
    let bad_column = state.columns.iter().find(|c| c.name == "BAD");
    assert!(
        bad_column
            .and_then(|c| c.problem.as_deref())
            .is_some_and(|p| p.starts_with("Not a JSONPath")),
        "{bad_column:?}"
    );
    let added = ["WHEN", "PHASE", "WHO", "KEYS"];
    let kubectl = |spec: &str| {
        let out = std::process::Command::new(crate::kit::tool("kubectl"))
            .arg("--kubeconfig")
            .arg(TestCluster::shared().admin_kubeconfig())
            .args([
                "get",
                "ats.cnat.study.jayground8",
                "-n",
                &ns,
                "--no-headers",
            ])
            .arg(format!("-o=custom-columns={spec}"))
            .output()
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(|word| serde_json::Value::String(word.to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(cells_of(&state, "nightly", &added), kubectl(spec));
    assert_eq!(cells_of(&state, "nightly", &["PHASE"]), ["<none>"]);
    assert_eq!(
        cells_of(&state, "nightly", &["BAD"]),
        [serde_json::Value::Null]
    );

    // A status change and a label arrive as deltas, the added cells recomputed.
    ats.patch_status(
        "nightly",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"phase": "DONE"}})),
    )
    .await
    .expect("patch status");
    ats.patch(
        "nightly",
        &PatchParams::default(),
        &Patch::Merge(
            serde_json::json!({"metadata": {"labels": {"app.kubernetes.io/name": "cron"}}}),
        ),
    )
    .await
    .expect("label");
    until(&mut sub, &mut state, |s| {
        cells_of(s, "nightly", &["PHASE", "KEYS"]) == ["DONE", "cron"]
    })
    .await;
    assert_eq!(cells_of(&state, "nightly", &added), kubectl(spec));
    // The plain table goes on with kubectl's columns alone.
    let mut plain_state = TableState::default();
    until(&mut plain, &mut plain_state, |s| {
        phase_of(s, "nightly") == Some("DONE".into())
    })
    .await;
    assert_eq!(plain_state.columns.len(), 4);

    // Paths of many values, a list's every item and a filter's matches, joined by
    // commas as kubectl joins them (three writers by now: the create and two patches).
    let many = r#"MANAGERS:.metadata.managedFields[*].manager,OPS:.metadata.managedFields[?(@.subresource=="status")].operation"#;
    let mut listed = hub
        .subscribe(TableQuery {
            columns: Some(many.into()),
            ..ats_query(&ns)
        })
        .expect("table with many-valued columns");
    let mut many_state = TableState::default();
    until(&mut listed, &mut many_state, |s| s.len() == 1).await;
    let printed = kubectl(many);
    assert_eq!(
        cells_of(&many_state, "nightly", &["MANAGERS", "OPS"]),
        printed
    );
    assert!(
        printed
            .first()
            .and_then(|v| v.as_str())
            .is_some_and(|managers| managers.contains(',')),
        "several managers: {printed:?}"
    );
    crate::kit::delete_namespace(&client, &ns).await;
}

/// (group, version, plural, columns of `kubectl get`, columns of `kubectl get -o wide`)
type ColumnCase = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

#[tokio::test]
async fn every_seed_table_has_kubectls_columns_with_and_without_wide() {
    let client = client_with_seed_crds().await;
    let cases: [ColumnCase; 5] = [
        (
            "iksoon.test.com",
            "v1",
            "crdplural",
            &["Name", "DBorWAS", "Age"],
            &["Name", "DBorWAS", "replicas", "Age"],
        ),
        (
            "cnat.study.jayground8",
            "v1alpha1",
            "ats",
            &["Name", "schedule", "command", "phase"],
            &["Name", "schedule", "command", "phase"],
        ),
        (
            "extensions.example.com",
            "v1",
            "websites",
            &["Name", "Age"],
            &["Name", "Age"],
        ),
        (
            "apps.anupam.com",
            "v1",
            "helloapps",
            &["Name", "Age"],
            &["Name", "Age"],
        ),
        (
            "infra.sealyun.com",
            "v1",
            "virtulmachines",
            &["Name", "Age"],
            &["Name", "Age"],
        ),
    ];
    for (group, version, plural, narrow, wide) in cases {
        let query = TableQuery {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            namespace: Some("default".into()),
            label_selector: None,
            field_selector: None,
            columns: None,
        };
        let snapshot: TableSnapshot = table_api::list(&client, &query, 10_000, None, None)
            .await
            .expect("Table list")
            .table;
        let state = TableState::from_snapshot(snapshot);
        let names = |wide: bool| -> Vec<String> {
            state
                .visible_columns(wide)
                .into_iter()
                .map(|i| state.columns[i].name.clone())
                .collect()
        };
        assert_eq!(names(false), narrow, "{plural}");
        assert_eq!(names(true), wide, "{plural} -o wide");
    }
}

#[tokio::test]
async fn children_and_owners_follow_owner_references_live() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use portico_server::live::views::children::{Viewer, children_stream};

    let client = client_with_seed_crds().await;
    let ns = crate::kit::fresh_namespace(&client, "owners").await;
    let owner = ats_api(&client, &ns)
        .create(&PostParams::default(), &at("owner"))
        .await
        .expect("create At");
    let uid = owner.metadata.uid.clone().expect("uid");

    let hub = WatchHub::new(client.clone(), Duration::from_millis(200));
    let kinds = crate::kit::kinds(&client).await;
    let mut children = Box::pin(
        children_stream(
            &hub,
            Viewer {
                client: &client,
                owner: None,
                person: None,
            },
            kinds.child_kinds("", usize::MAX),
            ns.clone(),
            uid.clone(),
        )
        .expect("within the hub's limits"),
    );
    let first = tokio::time::timeout(WAIT, children.next())
        .await
        .expect("in time")
        .expect("a list");
    assert!(first.is_empty(), "{first:?}");

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "owned", "ownerReferences": [{
            "apiVersion": "cnat.study.jayground8/v1alpha1", "kind": "At",
            "name": "owner", "uid": uid, "controller": true
        }]},
        "data": {"k": "v"}
    }))
    .expect("ConfigMap");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create child");
    let listed = tokio::time::timeout(WAIT, children.next())
        .await
        .expect("in time")
        .expect("a list");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (listed[0].kind.as_str(), listed[0].name.as_str()),
        ("ConfigMap", "owned")
    );
    assert_eq!(listed[0].href, format!("/r/core/v1/configmaps/{ns}/owned"));

    // The child's detail names its owner and links to it.
    let detail = portico_server::web::backend::detail::object_detail(
        &client,
        &kinds,
        &portico_core::resource::ResourceRef::new("", "v1", "configmaps"),
        Some(&ns),
        "owned",
    )
    .await
    .expect("detail");
    assert_eq!(detail.owners.len(), 1);
    assert_eq!(detail.owners[0].kind, "At");
    assert!(detail.owners[0].controller);
    assert_eq!(
        detail.owners[0].href.as_deref(),
        Some(format!("/r/cnat.study.jayground8/v1alpha1/ats/{ns}/owner").as_str())
    );

    cms.delete("owned", &DeleteParams::default())
        .await
        .expect("delete child");
    let after = tokio::time::timeout(WAIT, children.next())
        .await
        .expect("in time")
        .expect("a list");
    assert!(after.is_empty(), "{after:?}");
}

#[tokio::test]
async fn a_deletion_held_by_a_finalizer_is_explained() {
    let client = client_with_seed_crds().await;
    let ns = crate::kit::fresh_namespace(&client, "final").await;
    let resource = kube::discovery::ApiResource {
        group: "infra.sealyun.com".into(),
        version: "v1".into(),
        api_version: "infra.sealyun.com/v1".into(),
        kind: "VirtulMachine".into(),
        plural: "virtulmachines".into(),
    };
    let vms: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &resource);
    let vm: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "infra.sealyun.com/v1", "kind": "VirtulMachine",
        "metadata": {"name": "vm", "finalizers": ["infra.sealyun.com/cleanup"]},
        "spec": {"cpu": "1", "memory": "2G"}
    }))
    .expect("vm");
    vms.create(&PostParams::default(), &vm)
        .await
        .expect("create");
    vms.delete("vm", &DeleteParams::default())
        .await
        .expect("delete");
    let detail = portico_server::web::backend::detail::object_detail(
        &client,
        &crate::kit::kinds(&client).await,
        &portico_core::resource::ResourceRef::new("infra.sealyun.com", "v1", "virtulmachines"),
        Some(&ns),
        "vm",
    )
    .await
    .expect("still there, held by its finalizer");
    assert!(detail.deletion_timestamp.is_some());
    assert_eq!(detail.finalizers, ["infra.sealyun.com/cleanup"]);
    // Let it go.
    vms.patch(
        "vm",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove finalizer");
}

/// Two people watching the same 1,200 objects, each through their own upstream watch:
/// the page gets the first 500 rows from a limited list before the rest, a viewer of
/// whole tables one snapshot, nothing twice; and the replica holds one copy of the
/// rows, while each person is charged for all of them.
#[tokio::test]
async fn two_peoples_feeds_of_one_big_list_share_its_rows_and_show_the_first_page_first() {
    use portico_server::live::budgets::limits::LiveLimits;
    use portico_server::live::feeds::subscription::Delivery;
    use std::sync::Arc;
    let client = client_with_seed_crds().await;
    let ns = crate::kit::fresh_namespace(&client, "shared").await;
    let ats = ats_api(&client, &ns);
    let total = 1_200;
    futures::future::join_all((0..total).map(|i| {
        let ats = ats.clone();
        async move {
            ats.create(&PostParams::default(), &at(&format!("at-{i:04}")))
                .await
                .expect("create At")
        }
    }))
    .await;
    let hub = WatchHub::bounded(
        client.clone(),
        Duration::from_millis(200),
        &LiveLimits::default(),
        crate::kit::kinds(&client).await,
    );
    let query = ats_query(&ns);
    let (ada, bob) = (Some("ada".to_string()), Some("bob".to_string()));
    let mut page = hub
        .subscribe_as(query.clone(), &client, ada.clone(), ada.clone())
        .expect("within limits")
        .delivered(Delivery::InParts);
    let mut whole = hub
        .subscribe_as(query, &client, bob.clone(), bob.clone())
        .expect("within limits");
    assert_eq!(hub.upstream_watches(), 2, "one watch per person");

    let TableChange::Partial(first) = next(&mut page).await else {
        panic!("the first page before the rest");
    };
    assert_eq!(first.rows.len(), 500, "a limited first page");
    let mut ada_rows = first.rows;
    loop {
        match next(&mut page).await {
            TableChange::Rows { rows, complete } => {
                ada_rows.extend(rows);
                if complete {
                    break;
                }
            }
            other => panic!("the rest of the list expected, got {other:?}"),
        }
    }
    let TableChange::Snapshot(bob_table) = next(&mut whole).await else {
        panic!("one whole snapshot for a viewer of whole tables");
    };
    let mut names: Vec<&str> = ada_rows.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "every row once");
    assert_eq!(bob_table.rows.len(), total);

    let by_uid: std::collections::HashMap<&str, &Arc<_>> =
        ada_rows.iter().map(|r| (r.uid.as_str(), r)).collect();
    assert!(
        bob_table.rows.iter().all(|r| by_uid
            .get(r.uid.as_str())
            .is_some_and(|a| Arc::ptr_eq(a, r))),
        "one copy of each row, whoever's watch sent it"
    );
    let (ada_bytes, all_bytes) = hub.bytes_held(&ada);
    let (bob_bytes, _) = hub.bytes_held(&bob);
    println!("charged: Ada {ada_bytes} B, Bob {bob_bytes} B; held in all {all_bytes} B");
    assert!(ada_bytes > 100 * total && bob_bytes > 100 * total);
    // One copy of the rows, and each feed's own pointers to them: not two copies.
    assert!(
        all_bytes < ada_bytes * 6 / 5,
        "the replica holds one copy: {all_bytes} B for {ada_bytes} B each"
    );
}
