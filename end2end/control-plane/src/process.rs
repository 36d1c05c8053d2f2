//! Child processes that never outlive the process that started them.
//!
//! A test binary that shares one control plane keeps it in a `static`, whose
//! destructor never runs; a panicking test may skip destructors too. So each child
//! asks the kernel (PR_SET_PDEATHSIG) to be killed when its parent goes. The kernel
//! ties that to the *thread* that forked, so all children are forked from one
//! thread that lives as long as the process.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::OnceLock;
use std::sync::mpsc;

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

fn spawner() -> Option<&'static mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Option<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<SpawnRequest>();
            std::thread::Builder::new()
                .name("portico-spawner".into())
                .spawn(move || {
                    // Lives until the process exits: the receiver never sees all senders
                    // dropped because the static keeps one.
                    for (mut command, reply) in rx {
                        let _ = reply.send(command.spawn());
                    }
                })
                .ok()?;
            Some(tx)
        })
        .as_ref()
}

/// Spawns `command` so that the kernel kills it (SIGKILL) if this process dies.
pub fn spawn_tied(mut command: Command) -> io::Result<Child> {
    // SAFETY: prctl and getppid are async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may already have died between fork and prctl.
            if libc::getppid() == 1 {
                libc::_exit(1);
            }
            Ok(())
        });
    }
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner()
        .ok_or_else(|| io::Error::other("cannot start the spawner thread"))?
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("spawner thread has stopped"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("spawner thread has stopped"))?
}

/// Stops a child: SIGTERM, a short grace period, then SIGKILL; always reaps it.
pub fn stop(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: sending a signal to our own child's pid.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
