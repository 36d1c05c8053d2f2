#!/usr/bin/env python3
"""Writes an OCI image archive (an OCI image layout in a tar, what `docker load`,
`podman load`, `skopeo copy oci-archive:` and `ctr images import` read) from
directory trees, one layer each, and the runtime stage of a Dockerfile for the image's
configuration, without a container engine.

Reproducible: entries sorted, every mtime SOURCE_DATE_EPOCH, owners numeric (root, or
the uid given for a path prefix), gzip without a name or time. The same trees give the
same digest.

    oci.py OUT.tar REF DOCKERFILE TREE:PREFIX [TREE:PREFIX ...] [--owner PATH=UID:GID]...

TREE's contents go under PREFIX in the image ("/" or "/app").
"""

import datetime
import gzip
import hashlib
import io
import json
import os
import platform
import shlex
import sys
import tarfile

EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
# The OCI name of this machine's architecture (the trees hold its binaries).
ARCHITECTURE = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def runtime_config(dockerfile):
    """The image config of the Dockerfile's last stage: ENV, USER, WORKDIR, EXPOSE,
    ENTRYPOINT and CMD (the instructions an image config holds)."""
    lines, joined = [], ""
    with open(dockerfile) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not joined and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.endswith("\\"):
                joined += line[:-1] + " "
                continue
            lines.append(joined + line)
            joined = ""
    stages = [i for i, l in enumerate(lines) if l.split()[0].upper() == "FROM"]
    config = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    for line in lines[stages[-1] + 1:]:
        word, _, rest = line.strip().partition(" ")
        word, rest = word.upper(), rest.strip()
        if word == "ENV":
            for pair in shlex.split(rest):
                name = pair.split("=", 1)[0]
                config["Env"] = [e for e in config["Env"] if e.split("=", 1)[0] != name]
                config["Env"].append(pair)
        elif word == "USER":
            config["User"] = rest
        elif word == "WORKDIR":
            config["WorkingDir"] = rest
        elif word == "EXPOSE":
            ports = config.setdefault("ExposedPorts", {})
            for port in rest.split():
                ports[port if "/" in port else port + "/tcp"] = {}
        elif word in ("ENTRYPOINT", "CMD"):
            config["Entrypoint" if word == "ENTRYPOINT" else "Cmd"] = json.loads(rest)
    return config


def layer(tree, prefix, owners):
    """An uncompressed layer of `tree` under `prefix`, as bytes."""
    buf = io.BytesIO()
    prefix = prefix.strip("/")
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        entries = []
        for top, dirs, files in os.walk(tree):
            dirs.sort()
            for name in dirs + sorted(files):
                path = os.path.join(top, name)
                rel = os.path.relpath(path, tree)
                entries.append((os.path.join(prefix, rel) if prefix else rel, path))
        if prefix:
            # The prefix's own directories, as Docker's COPY makes them.
            parts = prefix.split("/")
            entries += [("/".join(parts[: i + 1]), tree) for i in range(len(parts))]
        for name, path in sorted(entries):
            # Each file whole, never as a link to an earlier entry: a tree copied and
            # one hard-linked are the same layer.
            tar.inodes.clear()
            info = tar.gettarinfo(path, arcname=name)
            info.mtime = EPOCH
            info.uid, info.gid = 0, 0
            for owned, (uid, gid) in owners.items():
                if name == owned or name.startswith(owned + "/"):
                    info.uid, info.gid = uid, gid
            info.uname = info.gname = ""
            info.pax_headers = {}
            if info.isreg():
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    return buf.getvalue()


def blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return "sha256:" + digest


def main(argv):
    out, ref, dockerfile = argv[:3]
    trees, owners = [], {}
    rest = argv[3:]
    while rest:
        arg = rest.pop(0)
        if arg == "--owner":
            path, ids = rest.pop(0).split("=")
            uid, gid = ids.split(":")
            owners[path.strip("/")] = (int(uid), int(gid))
        else:
            tree, prefix = arg.rsplit(":", 1)
            trees.append((tree, prefix))
    blobs, layers, diff_ids, unpacked = {}, [], [], 0
    for tree, prefix in trees:
        raw = layer(tree, prefix, owners)
        unpacked += len(raw)
        diff_ids.append("sha256:" + hashlib.sha256(raw).hexdigest())
        packed = io.BytesIO()
        with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=9, mtime=0, filename="") as z:
            z.write(raw)
        data = packed.getvalue()
        layers.append({
            "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
            "digest": blob(blobs, data),
            "size": len(data),
        })
    created = datetime.datetime.fromtimestamp(EPOCH, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")
    config = {
        "architecture": ARCHITECTURE,
        "os": "linux",
        "created": created,
        "config": runtime_config(dockerfile),
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [{"created": created, "created_by": "scripts/image.sh: " + p} for _, p in trees],
    }
    config_bytes = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": blob(blobs, config_bytes),
            "size": len(config_bytes),
        },
        "layers": layers,
    }
    manifest_bytes = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    digest = blob(blobs, manifest_bytes)
    tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else "latest"
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": digest,
            "size": len(manifest_bytes),
            # containerd names the image by the first, the OCI layout by the second.
            "annotations": {
                "io.containerd.image.name": ref,
                "org.opencontainers.image.ref.name": tag,
            },
        }],
    }
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True, separators=(",", ":")).encode(),
    }
    for d, data in blobs.items():
        files["blobs/sha256/" + d] = data
    tmp = out + ".part"
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in ["blobs", "blobs/sha256"]:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, EPOCH
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, EPOCH
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, out)
    packed = sum(l["size"] for l in layers) + len(config_bytes) + len(manifest_bytes)
    print(json.dumps({"ref": ref, "digest": digest, "compressed_bytes": packed,
                      "uncompressed_bytes": unpacked, "archive": out}))


if __name__ == "__main__":
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
