//! Benchmark of the Stack reconciler, against a real kube-apiserver and the real
//! `portico` binary (`--reconciler only`). Prints its figures; run with
//! `cargo bench -p server --bench stacks` (env BENCH_STACKS changes the count).
//!
//! N Stacks (half MySQL, half Tomcat) are created at once. A stand-in for the
//! cluster's workload controllers marks every StatefulSet and Deployment ready as it
//! appears (there is no controller-manager). Measured: time until every Stack has its
//! children, time until every Stack reports Ready, reconciles per second, and
//! Portico's peak RSS.
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use portico_control_plane::{ControlPlane, apply};
use portico_server::reconcile::stack::Stack;
use serde_json::json;

/// Plays the workload controller's part: every workload of kind K is marked ready at
/// its current generation.
async fn mark_ready<K>(client: kube::Client, ns: String)
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + serde::Serialize
        + 'static,
{
    let api: Api<K> = Api::namespaced(client, &ns);
    let mut done: HashSet<(String, i64)> = HashSet::new();
    let mut events = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    while let Some(Ok(obj)) = events.next().await {
        let generation = obj.meta().generation.unwrap_or(0);
        if !done.insert((obj.name_any(), generation)) {
            continue;
        }
        let replicas = serde_json::to_value(&obj)
            .ok()
            .and_then(|v| {
                v.pointer("/spec/replicas")
                    .and_then(serde_json::Value::as_i64)
            })
            .unwrap_or(1);
        let status = json!({"status": {"replicas": replicas, "readyReplicas": replicas,
            "updatedReplicas": replicas, "availableReplicas": replicas, "observedGeneration": generation}});
        let api = api.clone();
        let name = obj.name_any();
        tokio::spawn(async move {
            let _ = api
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await;
        });
    }
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::var("BENCH_STACKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let plane = tokio::task::spawn_blocking(ControlPlane::start)
        .await
        .expect("join")
        .expect("control plane");
    let client = plane.admin_client().await.expect("client");
    let crd = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/stack.yaml");
    apply::apply_all(&client, apply::read_documents(&crd).expect("CRD"))
        .await
        .expect("CRD applies");
    let ns = "bench".to_string();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).expect("ns"),
        )
        .await
        .expect("namespace");

    let reconciles = Arc::new(AtomicU64::new(0));
    let mut server = Command::new(env!("CARGO_BIN_EXE_portico"))
        .env("KUBECONFIG", plane.admin_kubeconfig())
        .env("PORTICO_RECONCILER", "only")
        .env("POD_NAMESPACE", &ns)
        .env("PORTICO_LOG", "warn,portico_server::reconcile=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("portico starts");
    for pipe in [
        Box::new(server.stdout.take().expect("stdout")) as Box<dyn std::io::Read + Send>,
        Box::new(server.stderr.take().expect("stderr")),
    ] {
        let counter = reconciles.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if line.contains("reconciled") {
                    counter.fetch_add(1, Ordering::Relaxed);
                } else if line.contains("WARN") || line.contains("ERROR") {
                    eprintln!("[portico] {line}");
                }
            }
        });
    }
    tokio::spawn(mark_ready::<StatefulSet>(client.clone(), ns.clone()));
    tokio::spawn(mark_ready::<Deployment>(client.clone(), ns.clone()));

    let stacks: Api<Stack> = Api::namespaced(client.clone(), &ns);
    let sts: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), &ns);
    let started = Instant::now();
    futures::stream::iter(0..count)
        .map(|i| {
            let stacks = stacks.clone();
            let choice = if i % 2 == 0 { "mysql" } else { "tomcat" };
            async move {
                let stack: Stack = serde_json::from_value(json!({
                    "apiVersion": "portico.dev/v1alpha1", "kind": "Stack",
                    "metadata": {"name": format!("s-{i:04}")}, "spec": {"choice": choice}
                }))
                .expect("stack");
                stacks
                    .create(&PostParams::default(), &stack)
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(64)
        .for_each(|r| async move { r.expect("create Stack") })
        .await;
    let created = started.elapsed();

    // Watch the Stacks until all are Ready; note when all workloads exist.
    let mut ready: HashSet<String> = HashSet::new();
    let mut children_at = None;
    let mut peak = 0f64;
    let mut events = watcher(stacks.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let deadline = Instant::now() + Duration::from_secs(900);
    let mut last_check = Instant::now();
    while ready.len() < count && Instant::now() < deadline {
        let next = tokio::time::timeout(Duration::from_secs(1), events.next()).await;
        if let Ok(Some(Ok(stack))) = next {
            let phase = stack.status.as_ref().and_then(|s| s.phase.as_deref());
            if phase == Some("Ready") {
                ready.insert(stack.name_any());
            } else {
                ready.remove(&stack.name_any());
            }
        }
        if children_at.is_none() && last_check.elapsed() > Duration::from_millis(500) {
            last_check = Instant::now();
            let lp = kube::api::ListParams::default();
            let workloads = sts
                .list_metadata(&lp)
                .await
                .map(|l| l.items.len())
                .unwrap_or(0)
                + deployments
                    .list_metadata(&lp)
                    .await
                    .map(|l| l.items.len())
                    .unwrap_or(0);
            if workloads >= count {
                children_at = Some(started.elapsed());
            }
        }
        peak = peak.max(common::rss_mb(server.id(), "VmHWM:"));
    }
    let all_ready = started.elapsed();
    let n = reconciles.load(Ordering::Relaxed);
    println!(
        "stacks: {count} ({} MySQL, {} Tomcat)",
        count.div_ceil(2),
        count / 2
    );
    println!("created in {:.1}s", created.as_secs_f64());
    match children_at {
        Some(t) => println!("every Stack has its workload after {:.1}s", t.as_secs_f64()),
        None => println!("workloads incomplete"),
    }
    println!(
        "Ready: {}/{count} after {:.1}s",
        ready.len(),
        all_ready.as_secs_f64()
    );
    println!(
        "reconciles: {n} ({:.0}/s over the run)",
        n as f64 / all_ready.as_secs_f64()
    );
    println!("portico peak RSS: {peak:.0} MB");
    let _ = server.kill();
    let _ = server.wait();
}
