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

#[test]
fn killing_the_launcher_stops_every_process_of_the_cluster() {
    let mut launcher = Command::new(env!("CARGO_BIN_EXE_portico-control-plane"))
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
    assert!(line.starts_with("KUBECONFIG="), "unexpected output: {line}");

    let children = children_of(launcher.id());
    let mut programs: Vec<String> = children.iter().map(|pid| program_of(*pid)).collect();
    programs.sort();
    // Killed before anything is asserted, so that a failing assertion leaves nothing
    // running either.
    launcher.kill().expect("SIGKILL the launcher");
    launcher.wait().expect("reap the launcher");
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
