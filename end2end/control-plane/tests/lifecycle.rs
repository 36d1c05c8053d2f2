//! The local cluster's processes never outlive the process that started them, even
//! when that process is killed outright (no destructors, no signal handlers).
// Tests and benchmarks stop loudly at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Direct children of `pid`, from /proc.
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Waits for a process that is not our child to exit, through a pidfd (which becomes
/// readable on exit). True when it exited within `timeout`.
fn wait_exit(pid: i32, timeout: Duration) -> bool {
    // SAFETY: plain syscalls on integers we own; the fd is closed below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        // ESRCH: already gone.
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    let ready = unsafe { libc::poll(&mut pfd, 1, millis) };
    unsafe { libc::close(fd) };
    ready == 1
}

/// The program a process runs, without the version suffix of a cached binary
/// (`kube-apiserver-v1.35.4` → `kube-apiserver`).
fn program_of(pid: i32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    let base = String::from_utf8_lossy(argv0)
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_string();
    match base.rfind("-v") {
        Some(at) => base[..at].to_string(),
        None => base,
    }
}

/// A launcher started with `args`, once it has printed its kubeconfig (it is ready).
struct Launched {
    launcher: std::process::Child,
    kubeconfig: String,
}

fn launch(args: &[&str]) -> Launched {
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_portico-control-plane"))
        .args(args)
        .arg("up")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("launcher starts");
    let stdout = launcher.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("launcher prints its kubeconfig once ready");
    let kubeconfig = line
        .trim()
        .strip_prefix("KUBECONFIG=")
        .unwrap_or_else(|| panic!("unexpected output: {line}"))
        .to_string();
    Launched {
        launcher,
        kubeconfig,
    }
}

impl Launched {
    /// SIGKILLs the launcher (no destructor, no signal handler runs) and reaps it.
    fn kill(mut self) {
        self.launcher.kill().expect("SIGKILL the launcher");
        self.launcher.wait().expect("reap the launcher");
    }
}

#[test]
fn killing_the_launcher_stops_every_process_of_the_cluster() {
    let launched = launch(&["--nodes", "simulated"]);
    let children = children_of(launched.launcher.id());
    let mut programs: Vec<String> = children.iter().map(|pid| program_of(*pid)).collect();
    programs.sort();
    // Killed before anything is asserted, so that a failing assertion leaves nothing
    // running either.
    launched.kill();
    let outlived: Vec<i32> = children
        .iter()
        .copied()
        .filter(|pid| !wait_exit(*pid, Duration::from_secs(10)))
        .collect();
    assert_eq!(
        programs,
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok"
        ],
        "the whole cluster runs under the launcher: {children:?}"
    );
    assert!(outlived.is_empty(), "outlived their launcher: {outlived:?}");
}

/// Every process whose PID namespace is `pid`'s, as the host sees them.
fn in_pid_namespace_of(pid: i32) -> Vec<i32> {
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let target = ns(&pid.to_string());
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| target.is_some() && ns(&p.to_string()) == target)
        .collect()
}

fn host_links() -> String {
    let out = Command::new("ip")
        .args(["-o", "link"])
        .output()
        .expect("ip");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The real node's cgroup directories under every hierarchy.
fn node_cgroups(launcher: u32) -> Vec<std::path::PathBuf> {
    let prefix = format!("portico-node-{launcher}-");
    std::fs::read_dir("/sys/fs/cgroup")
        .expect("/sys/fs/cgroup")
        .flatten()
        .filter_map(|h| std::fs::read_dir(h.path()).ok())
        .flat_map(|dir| dir.flatten())
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// A Pod running on the real node (containers, overlay mounts, a network namespace,
/// Pod cgroups) behind a NodePort Service (kube-proxy's iptables rules): what a
/// killed launcher must not leave behind.
fn run_a_pod(kubeconfig: &str) {
    use k8s_openapi::api::core::v1::{Pod, Service};
    use kube::api::{Api, PostParams};
    use kube::runtime::wait::{await_condition, conditions::is_pod_running};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client =
            portico_control_plane::kubeconfig::client_from(std::path::Path::new(kubeconfig))
                .await
                .expect("client");
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sleeper", "labels": {"app": "sleeper"}},
            "spec": {"containers": [{
                "name": "sleep", "image": "portico.local/mariadb:10.11",
                "command": ["sleep", "infinity"],
            }]},
        }))
        .expect("pod");
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "sleeper"},
            "spec": {"type": "NodePort", "selector": {"app": "sleeper"},
                     "ports": [{"port": 80, "targetPort": 80}]},
        }))
        .expect("service");
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create Pod");
        Api::<Service>::namespaced(client, "default")
            .create(&PostParams::default(), &service)
            .await
            .expect("create Service");
        tokio::time::timeout(
            Duration::from_secs(120),
            await_condition(pods, "sleeper", is_pod_running()),
        )
        .await
        .expect("the Pod runs within 2 minutes")
        .expect("watching the Pod");
    });
}

#[test]
fn killing_the_launcher_of_a_real_node_leaves_nothing_behind() {
    // Other local clusters may run meanwhile (each with its own portico<N>): this
    // node's interface is the one that appears with it.
    let links_without = host_links();
    let launched = launch(&["--nodes", "real"]);
    let launcher = launched.launcher.id();
    run_a_pod(&launched.kubeconfig);

    let children = children_of(launcher);
    let unshare = children
        .iter()
        .copied()
        .find(|pid| program_of(*pid) == "unshare")
        .expect("the node's namespaces run under the launcher");
    let init = *children_of(unshare as u32)
        .first()
        .expect("the node's init");
    let node_processes = in_pid_namespace_of(init);
    let node_programs: Vec<String> = node_processes.iter().map(|p| program_of(*p)).collect();
    let cgroups_before = node_cgroups(launcher);
    let links_before = host_links();
    let mounts_before = std::fs::read_to_string("/proc/self/mountinfo").expect("mountinfo");

    launched.kill();
    // Everything the launcher started, the node's processes, and the guardian that
    // removes the node's cgroups once they are gone.
    let outlived: Vec<i32> = children
        .iter()
        .chain(&node_processes)
        .copied()
        .filter(|pid| !wait_exit(*pid, Duration::from_secs(30)))
        .collect();

    for program in [
        "containerd",
        "kubelet",
        "kube-proxy",
        "coredns",
        "containerd-shim-runc",
    ] {
        assert!(
            node_programs.iter().any(|p| p.starts_with(program)),
            "{program} runs in the node's namespaces: {node_programs:?}"
        );
    }
    assert!(
        node_programs.iter().any(|p| p == "sleep"),
        "the Pod's container runs in the node's namespaces: {node_programs:?}"
    );
    assert!(
        !cgroups_before.is_empty(),
        "the node has cgroups of its own"
    );
    assert!(outlived.is_empty(), "outlived their launcher: {outlived:?}");
    assert_eq!(
        node_cgroups(launcher),
        Vec::<std::path::PathBuf>::new(),
        "cgroups left"
    );
    assert!(
        links_before.contains(": portico"),
        "the node's veth: {links_before}"
    );
    let links_after = host_links();
    let ours = |links: &str| -> Vec<String> {
        links
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .filter(|name| name.starts_with("portico"))
            .map(str::to_string)
            .collect()
    };
    let its_own: Vec<String> = ours(&links_before)
        .into_iter()
        .filter(|link| !ours(&links_without).contains(link))
        .collect();
    assert_eq!(its_own.len(), 1, "one interface of its own: {links_before}");
    for link in its_own {
        assert!(!ours(&links_after).contains(&link), "interface {link} left");
    }
    // Nothing of the node (overlay snapshots, volumes, /run) was ever mounted where
    // the host sees it, even while it ran.
    assert_eq!(cluster_mounts(&mounts_before), Vec::<String>::new());
    let rules = Command::new("iptables-save")
        .output()
        .expect("iptables-save");
    assert!(
        !String::from_utf8_lossy(&rules.stdout).contains("KUBE-"),
        "kube-proxy's rules reached the host"
    );
}

/// Mount points in `mountinfo` under a local cluster's directory.
fn cluster_mounts(mountinfo: &str) -> Vec<String> {
    mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|point| point.contains("portico-cp-"))
        .map(str::to_string)
        .collect()
}
