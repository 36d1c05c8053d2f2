//! The images the real node runs: built on this machine from pinned Debian packages
//! by `end2end/images/build.sh` (cached under `~/.cache/portico/images`), and
//! imported into the node's containerd, since no registry can be reached.

use std::path::Path;
use std::process::Command;

use crate::{ControlPlaneError, io_err};

/// `ctr` talking to the node's containerd, in the namespace the CRI plugin uses.
pub fn ctr(socket: &Path) -> Command {
    let mut cmd = Command::new("ctr");
    cmd.arg("--address")
        .arg(socket)
        .args(["--namespace", "k8s.io"]);
    cmd
}

/// Builds what is not cached yet; returns (reference, tarball) for every image.
pub fn built() -> Result<Vec<(String, String)>, ControlPlaneError> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../images/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(io_err(format!("running {}", script.display())))?;
    if !out.status.success() {
        return Err(ControlPlaneError::Setup {
            what: "building the node's images (end2end/images/build.sh)",
            message: crate::readiness::last_lines(&String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let (reference, path) = line.split_once('\t')?;
            Some((reference.to_string(), path.to_string()))
        })
        .collect())
}

/// Imports every image into the containerd listening on `socket`.
pub fn import_all(socket: &Path) -> Result<(), ControlPlaneError> {
    for (reference, tarball) in built()? {
        import(
            socket,
            Path::new(&tarball),
            &format!("{reference} ({tarball})"),
        )?;
        tracing::debug!(image = %reference, "imported into the real node");
    }
    Ok(())
}

/// Imports one archive (docker-archive or OCI image layout, as `docker save` and
/// `scripts/image.sh` write) into the containerd listening on `socket`; a failure
/// names the archive as `named` and quotes ctr.
pub fn import(socket: &Path, archive: &Path, named: &str) -> Result<(), ControlPlaneError> {
    let out = ctr(socket)
        .args(["images", "import"])
        .arg(archive)
        .output()
        .map_err(io_err("running ctr"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(ControlPlaneError::Setup {
        what: "importing an image into the node's containerd",
        message: format!("{named}: {}", String::from_utf8_lossy(&out.stderr).trim()),
    })
}
