//! Where the real node lives: PID, mount and network namespaces of its own, joined to
//! the host by one veth pair, with a cgroup subtree of its own.
//!
//! Nothing of it outlives the launcher, even when the launcher is SIGKILLed:
//! - processes: the namespaces' first process (tini, which reaps the shims containerd
//!   leaves behind) is started through `unshare --kill-child`, which is tied to the
//!   launcher (PR_SET_PDEATHSIG); when PID 1 of a PID namespace dies, the kernel kills
//!   everything else in it.
//! - mounts (overlayfs snapshots, pod volumes, /run, network namespace files): made in
//!   the node's private mount namespace, which goes with its last process.
//! - interfaces, bridges and iptables rules: in the node's network namespace; the
//!   host's end of the veth pair goes when its peer's namespace does.
//! - cgroups: kubelet and runc make directories under the node's cgroup root, which the
//!   kernel does not remove. A guardian process (its own process group, not tied to the
//!   launcher) waits for the namespaces' end and removes them.

use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{ControlPlaneError, io_err, process};

/// Where the cgroup v1 hierarchies (and, in hybrid mode, the unified one) are mounted.
const CGROUP_FS: &str = "/sys/fs/cgroup";
/// The host's end of the veth pair is `portico<N>`; the node's is `eth0`.
const HOST_LINK_PREFIX: &str = "portico";
/// The node's network is `10.200.N.0/24`: the host's end is .1, the node .2.
const NETWORK_PREFIX: [u8; 2] = [10, 200];

/// Removes the node's cgroups once its namespaces have ended (arguments: the pid of
/// the namespaces' init as the host sees it, then the cgroup directories). Processes
/// of a PID namespace are gone by the time its init's exit is seen, but the kernel
/// may still be releasing a cgroup: retry for a few seconds.
const GUARDIAN: &str = r#"
init="$1"; shift
tail --pid="$init" --sleep-interval=0.1 -f /dev/null
for _ in $(seq 100); do
  left=0
  for dir in "$@"; do
    [ -d "$dir" ] || continue
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
    [ -d "$dir" ] && left=1
  done
  [ "$left" = 0 ] && exit 0
  sleep 0.1
done
echo "portico node guardian: could not remove $*" >&2
exit 1
"#;

/// The node's namespaces, network and cgroup root. Dropping it ends them all.
pub struct Sandbox {
    /// `unshare`, tied to this process.
    unshare: Child,
    /// The namespaces' init (tini) as the host sees it: what `nsenter` targets.
    init_pid: u32,
    index: u8,
    cgroup_root: String,
    guardian: Child,
}

impl Sandbox {
    /// Makes the namespaces, the veth pair and the cgroup root.
    pub fn create() -> Result<Self, ControlPlaneError> {
        let mut cmd = Command::new("unshare");
        cmd.args([
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--propagation",
            "private",
            "--mount-proc",
            "--net",
            "--uts",
            "--",
            "tini",
            "--",
            "sleep",
            "infinity",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
        let mut unshare = process::spawn_tied(cmd).map_err(io_err("starting unshare"))?;
        let init_pid = match wait_for_child(&mut unshare) {
            Ok(pid) => pid,
            Err(e) => {
                process::stop(&mut unshare);
                return Err(e);
            }
        };
        let cgroup_root = format!("portico-node-{}-{init_pid}", std::process::id());
        let cgroup_dirs = cgroup_dirs(&cgroup_root);
        // From here on the guardian cleans up whatever happens to this process.
        let guardian = Command::new("bash")
            .arg("-c")
            .arg(GUARDIAN)
            .arg("portico-node-guardian")
            .arg(init_pid.to_string())
            .args(&cgroup_dirs)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(io_err("starting the node's guardian"))?;
        let mut sandbox = Self {
            unshare,
            init_pid,
            index: 0,
            cgroup_root,
            guardian,
        };
        sandbox.index = sandbox.link()?;
        sandbox.configure_inside()?;
        make_cgroups(&cgroup_dirs)?;
        Ok(sandbox)
    }

    /// The host's address on the node's network (the API server is forwarded here).
    pub fn host_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(NETWORK_PREFIX[0], NETWORK_PREFIX[1], self.index, 1)
    }

    /// The node's address (its InternalIP).
    pub fn node_ip(&self) -> Ipv4Addr {
        Ipv4Addr::new(NETWORK_PREFIX[0], NETWORK_PREFIX[1], self.index, 2)
    }

    /// The host's end of the veth pair.
    pub fn host_link(&self) -> String {
        format!("{HOST_LINK_PREFIX}{}", self.index)
    }

    /// The cgroup (under every hierarchy) the node's Pods live under.
    pub fn cgroup_root(&self) -> &str {
        &self.cgroup_root
    }

    /// The pid of the namespaces' init, as the host sees it.
    pub fn init_pid(&self) -> u32 {
        self.init_pid
    }

    /// `program` run inside the node's namespaces.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.init_pid))
            .args(["--pid", "--mount", "--net", "--uts", "--"])
            .arg(program);
        cmd
    }

    /// Creates the veth pair with the node's end made inside its namespace, so that
    /// the pair never exists outside it; picks the first free `portico<N>`.
    fn link(&self) -> Result<u8, ControlPlaneError> {
        for index in 0..=254u8 {
            let name = format!("{HOST_LINK_PREFIX}{index}");
            let out = Command::new("ip")
                .args(["link", "add", &name, "type", "veth", "peer", "name", "eth0"])
                .args(["netns", &self.init_pid.to_string()])
                .output()
                .map_err(io_err("running ip"))?;
            if out.status.success() {
                let host = format!("{}.{}.{index}.1/24", NETWORK_PREFIX[0], NETWORK_PREFIX[1]);
                run(Command::new("ip").args(["addr", "add", &host, "dev", &name]))?;
                run(Command::new("ip").args(["link", "set", &name, "up"]))?;
                return Ok(index);
            }
            if !String::from_utf8_lossy(&out.stderr).contains("File exists") {
                return Err(setup(format!(
                    "ip link add {name}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        Err(setup("no free portico<N> interface name (0-254)".into()))
    }

    /// The node's side: its address and routes, forwarding on, and fresh /run and
    /// /var/log (containerd's sockets, network namespace files, kubelet's
    /// /var/log/containers) that the host never sees.
    fn configure_inside(&self) -> Result<(), ControlPlaneError> {
        let node = format!("{}/24", self.node_ip());
        let host = self.host_ip().to_string();
        let script = format!(
            "set -e
ip link set lo up
ip addr add {node} dev eth0
ip link set eth0 up
ip route add default via {host}
sysctl -qw net.ipv4.ip_forward=1
mount -t tmpfs -o mode=755 portico-node-run /run
mount -t tmpfs -o mode=755 portico-node-log /var/log
hostname portico-node"
        );
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.init_pid))
            .args(["--mount", "--net", "--uts", "--", "sh", "-c", &script]);
        run(&mut cmd)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // unshare's death kills the namespaces' init (--kill-child), and with it every
        // process of the node; the guardian then removes the cgroups.
        process::stop(&mut self.unshare);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.guardian.try_wait() {
                return;
            }
            // The guardian is another process with no event to wait on but its exit.
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!(cgroup = %self.cgroup_root, "the node's cgroups were not removed within 20 s");
    }
}

/// The cgroup directories of `root` under every mounted hierarchy.
fn cgroup_dirs(root: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(CGROUP_FS) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        // cpu and cpuacct may be symlinks to a joint hierarchy: count it once.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path().join(root))
        .collect();
    dirs.sort();
    dirs
}

fn make_cgroups(dirs: &[PathBuf]) -> Result<(), ControlPlaneError> {
    for dir in dirs {
        std::fs::create_dir_all(dir).map_err(io_err(format!("creating {}", dir.display())))?;
        // A new cpuset has no CPUs or memory nodes: give it its parent's.
        for file in ["cpuset.cpus", "cpuset.mems"] {
            let parent = dir.parent().map(|p| p.join(file));
            if let Some(value) = parent.and_then(|p| std::fs::read_to_string(p).ok()) {
                std::fs::write(dir.join(file), value.trim())
                    .map_err(io_err(format!("writing {file}")))?;
            }
        }
    }
    Ok(())
}

/// The pid of `unshare`'s forked child (the namespaces' init), once it has run tini.
fn wait_for_child(unshare: &mut Child) -> Result<u32, ControlPlaneError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let children = Path::new("/proc")
        .join(unshare.id().to_string())
        .join("task")
        .join(unshare.id().to_string())
        .join("children");
    while Instant::now() < deadline {
        if let Ok(Some(status)) = unshare.try_wait() {
            return Err(setup(format!(
                "unshare exited ({status}): are util-linux and tini installed, and is this root?"
            )));
        }
        let child = std::fs::read_to_string(&children)
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<u32>().ok());
        if let Some(pid) = child {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "tini" {
                return Ok(pid);
            }
        }
        // Another process's fork and exec: nothing to wait on but polling /proc.
        std::thread::sleep(Duration::from_millis(10));
    }
    Err(setup(
        "the node's namespaces did not start within 10 s".into(),
    ))
}

fn setup(message: String) -> ControlPlaneError {
    ControlPlaneError::Setup {
        what: "the real node's namespaces",
        message,
    }
}

/// Runs a setup command, failing with its stderr.
pub(crate) fn run(cmd: &mut Command) -> Result<(), ControlPlaneError> {
    let out = cmd
        .output()
        .map_err(io_err(format!("running {:?}", cmd.get_program())))?;
    if out.status.success() {
        return Ok(());
    }
    Err(ControlPlaneError::Setup {
        what: "the real node",
        message: format!(
            "{:?} {:?} failed ({}): {}",
            cmd.get_program(),
            cmd.get_args().collect::<Vec<_>>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}
