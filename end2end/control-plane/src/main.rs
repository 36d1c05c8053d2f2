//! `portico-control-plane`: starts a small local cluster (see the library), applies
//! manifests, and either runs a command against it (`exec`) or waits for Ctrl-C/SIGTERM
//! (`up`). Every process of the cluster stops when this one does, however it ends.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use clap::{Parser, Subcommand};
use portico_control_plane::{ControlPlane, Nodes, StartOptions, apply, corpus, node};

#[derive(Parser)]
#[command(
    about = "A small local Kubernetes cluster (real control plane, a real or simulated node) for Portico's dev command and tests"
)]
struct Cli {
    /// Where Pods run: one real node (kubelet, containerd; needs root), simulated
    /// KWOK nodes (no container runs), or auto: real when this machine can.
    #[arg(long, global = true, value_enum, default_value_t = NodeChoice::Auto)]
    nodes: NodeChoice,
    /// Apply every *.yaml in this directory after start-up (repeatable; CRDs first).
    #[arg(long = "apply", global = true)]
    apply_dirs: Vec<PathBuf>,
    /// Also apply the real-world CRD corpus described in this directory
    /// (end2end/crd-corpus): its CRDs from the module cache and their samples.
    #[arg(long, global = true)]
    corpus: Option<PathBuf>,
    /// Write the corpus's CRDs (kind, plural, served versions, sample) here as JSON.
    #[arg(long, global = true, requires = "corpus")]
    corpus_out: Option<PathBuf>,
    /// With a real node, `exec` gives its command this Stack catalog
    /// (PORTICO_STACK_CATALOG): images that exist on the node, built here.
    #[arg(long, global = true)]
    real_node_catalog: Option<PathBuf>,
    /// Import this image archive (docker-archive or OCI, e.g. `scripts/image.sh oci`'s)
    /// into the real node's runtime once it runs (repeatable).
    #[arg(long = "image", global = true)]
    images: Vec<PathBuf>,
    /// Also run an OpenID Connect provider (Dex) the API server trusts, and write
    /// what a client needs to know of it (issuer, CA, client, people) here as JSON.
    #[arg(long, global = true)]
    identity_provider_out: Option<PathBuf>,
    /// Also copy the admin kubeconfig here.
    #[arg(long, global = true)]
    kubeconfig_out: Option<PathBuf>,
    #[command(subcommand)]
    command: Mode,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum NodeChoice {
    Auto,
    Real,
    Simulated,
}

impl NodeChoice {
    fn decide(self) -> Nodes {
        match self {
            NodeChoice::Real => Nodes::Real,
            NodeChoice::Simulated => Nodes::Simulated,
            NodeChoice::Auto => match node::unavailable() {
                None => Nodes::Real,
                Some(why) => {
                    eprintln!(
                        "No real node ({why}): Pods run on simulated KWOK nodes, no container starts."
                    );
                    Nodes::Simulated
                }
            },
        }
    }
}

#[derive(Subcommand)]
enum Mode {
    /// Start, then wait for Ctrl-C or SIGTERM.
    Up,
    /// Start, run COMMAND with KUBECONFIG pointing at the control plane, stop when it exits.
    Exec {
        #[arg(trailing_var_arg = true, required = true)]
        command: Vec<String>,
    },
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime = tokio::runtime::Runtime::new().context("starting tokio")?;

    // Manifests go in before the controllers start, so the garbage collector knows
    // their kinds from the first second.
    let mut objects = Vec::new();
    for dir in &cli.apply_dirs {
        for file in apply::manifest_files(dir)? {
            objects.extend(apply::read_documents(&file)?);
        }
    }
    if let Some(dir) = &cli.corpus {
        let corpus = corpus::load(dir).context("loading the CRD corpus")?;
        if let Some(out) = &cli.corpus_out {
            let json = serde_json::to_vec_pretty(&corpus.entries)?;
            std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
        }
        objects.extend(corpus.objects());
    }
    let count = objects.len();
    let started = std::time::Instant::now();
    let nodes = cli.nodes.decide();
    let plane = ControlPlane::start_opts(StartOptions {
        objects,
        nodes,
        identity_provider: cli.identity_provider_out.is_some(),
    })
    .context("starting the control plane")?;
    if let (Some(out), Some(provider)) = (&cli.identity_provider_out, plane.identity_provider()) {
        let json = serde_json::to_vec_pretty(provider)?;
        std::fs::write(out, json).with_context(|| format!("writing {}", out.display()))?;
        tracing::info!(issuer = provider.issuer, "identity provider ready");
    }
    tracing::info!(
        server = plane.server_url(),
        version = portico_control_plane::pinned_kubernetes_version(),
        applied = count,
        nodes = ?nodes,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "cluster ready"
    );
    if !cli.images.is_empty() {
        let node = plane
            .real_node()
            .context("--image needs a real node (--nodes real)")?;
        for archive in &cli.images {
            node.import_image(archive)?;
            tracing::info!(image = %archive.display(), "imported into the real node");
        }
    }
    let kubeconfig = match &cli.kubeconfig_out {
        Some(out) => {
            std::fs::copy(plane.admin_kubeconfig(), out)
                .with_context(|| format!("copying the kubeconfig to {}", out.display()))?;
            out.clone()
        }
        None => plane.admin_kubeconfig().to_path_buf(),
    };
    println!("KUBECONFIG={}", kubeconfig.display());

    let code = match cli.command {
        Mode::Up => {
            runtime.block_on(shutdown_signal());
            0
        }
        Mode::Exec { command } => {
            let catalog = match nodes {
                Nodes::Real => cli.real_node_catalog.as_deref(),
                Nodes::Simulated => None,
            };
            runtime.block_on(run_child(&command, &kubeconfig, catalog))?
        }
    };
    drop(plane);
    std::process::exit(code);
}

async fn run_child(
    command: &[String],
    kubeconfig: &std::path::Path,
    catalog: Option<&std::path::Path>,
) -> anyhow::Result<i32> {
    let (program, args) = command.split_first().context("no command given")?;
    let mut cmd = Command::new(program);
    cmd.args(args).env("KUBECONFIG", kubeconfig);
    if let Some(catalog) = catalog {
        cmd.env("PORTICO_STACK_CATALOG", catalog);
    }
    let mut child = portico_control_plane::process::spawn_tied(cmd)
        .with_context(|| format!("starting {program}"))?;
    let pid = i32::try_from(child.id()).context("child pid out of range")?;
    let mut waiter = tokio::task::spawn_blocking(move || child.wait());
    let status = tokio::select! {
        status = &mut waiter => status??,
        _ = shutdown_signal() => {
            // SAFETY: signalling our own child, which is not yet reaped.
            unsafe { libc::kill(pid, libc::SIGTERM); }
            waiter.await??
        }
    };
    Ok(status.code().unwrap_or(1))
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
