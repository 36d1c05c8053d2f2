#!/usr/bin/env bash
# Portico's image without a Docker engine, from the same tree the Dockerfile copies.
#
#   scripts/image.sh rootfs DIR
#       The runtime filesystem alone, in DIR: what the distroless base held for Portico
#       (libc, libgcc_s, CA certificates, tzdata, netbase, base-files; a non-root user
#       65532 "nonroot"), from the Debian packages pinned in scripts/image/packages.txt,
#       unpacked without maintainer scripts. The Dockerfile's runtime stage is this tree
#       plus the release bundle, `FROM scratch`.
#
#   scripts/image.sh oci [BUNDLE] [OUT] [REF]
#       That tree plus BUNDLE (default target/bundle, made by scripts/release.sh) at
#       /app, as an OCI image archive OUT (default target/image/portico.oci.tar) named
#       REF (default portico.local/portico:dev), configured by the Dockerfile's runtime
#       stage (ENV, USER, EXPOSE, ENTRYPOINT). Prints one JSON line: ref, digest, sizes.
#       The same bundle gives the same digest. `docker load -i OUT`, `podman load -i
#       OUT`, `skopeo copy oci-archive:OUT docker://REGISTRY/portico:TAG` or
#       `ctr images import OUT` take it.
#
# Needs apt-get and dpkg-deb (any Debian or Ubuntu host; no root) and python3.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pins="$root/scripts/image/packages.txt"
mirror=http://deb.debian.org/debian
suite=bookworm
# Every timestamp in the image: the day packages.txt was pinned.
export SOURCE_DATE_EPOCH=1795478400 # 2026-11-24T00:00:00Z

# Files this script makes get the same modes whatever the caller's umask.
umask 022

# Unpacks the pinned packages into DIR and adds what their maintainer scripts (or the
# distroless build) would: the CA bundle, users, /tmp. A subshell, so that its scratch
# directory goes however it ends.
rootfs() ( # DIR
  local dir work deb name
  dir="$(realpath -m "$1")"
  work="$(mktemp -d)"
  # shellcheck disable=SC2064 # expand now
  trap "rm -rf '$work'" EXIT
  # A private apt (its own lists and cache) that reads only the pinned suite.
  mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/debs"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  printf '%s\n' "deb [signed-by=$keyring] $mirror $suite main" \
    "deb [signed-by=$keyring] $mirror $suite-updates main" \
    "deb [signed-by=$keyring] $mirror-security $suite-security main" >"$work/sources.list"
  local apt=(apt-get -q -o "Dir::Etc::SourceList=$work/sources.list" -o "Dir::Etc::SourceParts=$work/none"
    -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::Archives=$work/archives"
    -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "Debug::NoLocking=1"
    -o Acquire::Check-Valid-Until=false -o APT::Sandbox::User=root)
  "${apt[@]}" update >&2
  mapfile -t wanted < <(grep -Ev '^\s*(#|$)' "$pins")
  (cd "$work/debs" && "${apt[@]}" download "${wanted[@]}" >&2)

  rm -rf "$dir" && mkdir -p "$dir/var/lib/dpkg/status.d"
  for deb in "$work"/debs/*.deb; do
    dpkg-deb --extract "$deb" "$dir"
    # What scanners (trivy, grype) read in distroless images: each package's control.
    name="$(dpkg-deb --field "$deb" Package)"
    dpkg-deb --field "$deb" >"$dir/var/lib/dpkg/status.d/$name"
  done
  # Documentation but the copyrights, manuals, translations: not needed to run.
  find "$dir/usr/share/doc" -type f ! -name copyright -delete
  find "$dir/usr/share/doc" -type d -empty -delete
  rm -rf "$dir"/usr/share/{man,info,locale,lintian,gcc} "$dir/etc/init.d"
  # ca-certificates' postinst would make the bundle: every certificate, in order.
  mkdir -p "$dir/etc/ssl/certs"
  find "$dir/usr/share/ca-certificates" -name '*.crt' -print0 | LC_ALL=C sort -z |
    xargs -0 cat >"$dir/etc/ssl/certs/ca-certificates.crt"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$dir/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$dir/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$dir/etc/nsswitch.conf"
  mkdir -p "$dir/tmp" "$dir/root" "$dir/home/nonroot"
  chmod 1777 "$dir/tmp"
  chmod 700 "$dir/root" "$dir/home/nonroot"
  # As root (the Dockerfile's build stage), the tree carries the owner itself; oci.py
  # sets it either way.
  if [ "$(id -u)" = 0 ]; then chown 65532:65532 "$dir/home/nonroot"; fi
  find "$dir" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
  echo "image: runtime filesystem in $dir ($(du -sh "$dir" | cut -f1))" >&2
)

case "${1:-}" in
  rootfs)
    [ -n "${2:-}" ] || { echo "usage: $0 rootfs DIR" >&2; exit 2; }
    rootfs "$2"
    ;;
  oci)
    bundle="$(realpath "${2:-$root/target/bundle}")"
    out="$(realpath -m "${3:-$root/target/image/portico.oci.tar}")"
    ref="${4:-portico.local/portico:dev}"
    [ -x "$bundle/portico" ] || { echo "image: no server in $bundle (run scripts/release.sh)" >&2; exit 1; }
    # The runtime filesystem is cached by its recipe (this script and the pins).
    key="$(cat "${BASH_SOURCE[0]}" "$pins" | sha256sum | cut -c1-16)"
    cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/image-rootfs-$key"
    if [ ! -d "$cache" ]; then
      # Built beside the cache under a name of its own: two runs at once each build,
      # the first to finish keeps its tree.
      part="$(mktemp -d "$cache.part.XXXXXX")"
      rootfs "$part"
      mv -T "$part" "$cache" 2>/dev/null || rm -rf "$part"
    fi
    # Trees of other recipes go once unused for a day (another checkout may use one).
    touch "$cache"
    find "$(dirname "$cache")" -maxdepth 1 -name 'image-rootfs-*' ! -path "$cache" -mmin +1440 \
      -exec rm -rf {} + 2>/dev/null || true
    mkdir -p "$(dirname "$out")"
    python3 "$root/scripts/image/oci.py" "$out" "$ref" "$root/Dockerfile" \
      "$cache:/" "$bundle:/app" --owner home/nonroot=65532:65532
    ;;
  *)
    echo "usage: $0 rootfs DIR | oci [BUNDLE] [OUT] [REF]" >&2
    exit 2
    ;;
esac
