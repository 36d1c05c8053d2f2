#!/usr/bin/env bash
# Builds the container images the local cluster's real node runs, since no registry is
# reachable from here, as docker-archive tarballs (`ctr -n k8s.io images import FILE`):
#   portico.local/pause:3.10     the Pod sandbox: pause.c of the pinned Kubernetes, static
#   portico.local/mariadb:10.11  Debian's MariaDB + the official images' env contract
#   portico.local/tomcat:10.1    Debian's tomcat10 + headless JRE
# The Debian images share one debootstrap base; packages are pinned in packages.txt.
# Prints REF<TAB>PATH per image. Cached: an image is rebuilt only when this script,
# packages.txt, the entrypoint or pause.c change (their hash is in the file name).
# Needs root (debootstrap, chroot, mounts), debootstrap, gcc + static libc, jq, go.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
pins="$here/packages.txt"
dir="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/images"
suite=bookworm
mirror=http://deb.debian.org/debian
# Every timestamp in the images (file mtimes, config "created", shadow's last-change
# days): fixed, so that the same inputs give the same digests.
export SOURCE_DATE_EPOCH=1795478400 # 2026-11-24T00:00:00Z, when packages.txt was pinned
created="$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)"
path_env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

read -r k8s_dir k8s_version < <(cd "$here/../kubernetes" &&
  GOFLAGS=-mod=mod go list -m -f '{{.Dir}} {{.Version}}' k8s.io/kubernetes)
pause_src="$k8s_dir/build/pause"
key="$(cat "${BASH_SOURCE[0]}" "$pins" "$here/mariadb-entrypoint.sh" "$pause_src/linux/pause.c" |
  sha256sum | cut -c1-16)"
declare -A refs=([pause]=portico.local/pause:3.10 [mariadb]=portico.local/mariadb:10.11
  [tomcat]=portico.local/tomcat:10.1)
out() { echo "$dir/$1-$key.tar"; }
print() { for name in pause mariadb tomcat; do printf '%s\t%s\n' "${refs[$name]}" "$(out "$name")"; done; }
# Tarballs of other versions (an older script, another worktree sharing the cache) go
# once unused for a day, not at once: that version may be in use right now. A cache hit
# renews a tarball's mtime.
prune() { find "$dir" -maxdepth 1 -name "$1" -mmin +1440 -print -delete >&2; }

if [ -s "$(out pause)" ] && [ -s "$(out mariadb)" ] && [ -s "$(out tomcat)" ]; then
  touch -c "$(out pause)" "$(out mariadb)" "$(out tomcat)" 2>/dev/null || true
  print
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "build.sh: building the images needs root" >&2; exit 1; }
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9 # one build at a time per cache
work="$(mktemp -d "$dir/.work.XXXXXX")" # beside the cache, so results are mv'd in

# Whatever mounts runs in a private mount + PID namespace (ns): its mounts (debootstrap's
# /proc, /sys, /dev; ours) never reach the host and vanish with it, and killing it kills
# everything the chroot started. The trap also unmounts anything still under $work before
# deleting it, and never deletes through a mount.
ns_pid=
ns() {
  unshare --mount --propagation private --pid --fork --kill-child "$@" &
  ns_pid=$!
  wait "$ns_pid" # in the background so that a signal's trap runs at once
  ns_pid=
}
mounts_under() { awk -v w="$1/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }
cleanup() {
  # unshare itself holds off SIGINT/SIGTERM until its child ends: SIGKILL the child, the
  # namespace's init, which takes every process in the namespace with it.
  if [ -n "$ns_pid" ]; then pkill -KILL -P "$ns_pid" || true; wait "$ns_pid" 2>/dev/null || true; fi
  mounts_under "$work" | while read -r m; do umount -l "$m" || true; done
  if [ -n "$(mounts_under "$work")" ]; then echo "build.sh: still mounted, left $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Runs a shell script as root inside the tree ROOT, with /proc, /dev and the host's DNS
# (for apt) mounted in for it only. Tools that honour SOURCE_DATE_EPOCH (useradd) get it.
in_root() { # ROOT SCRIPT
  ns sh -euc '
    mount -t proc proc "$1/proc"
    mount --rbind /dev "$1/dev"
    touch "$1/etc/resolv.conf" && mount --bind /etc/resolv.conf "$1/etc/resolv.conf"
    exec chroot "$1" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin \
      DEBIAN_FRONTEND=noninteractive SOURCE_DATE_EPOCH="$3" /bin/sh -euxc "$2"' \
    _ "$1" "$2" "$SOURCE_DATE_EPOCH" >&2
}

# name=version for each package name, from packages.txt.
pinned() {
  local p v
  for p; do
    v="$(awk -v p="$p" 'index($0, p "=") == 1 { print substr($0, length(p) + 2); exit }' "$pins")"
    [ -n "$v" ] || { echo "build.sh: $p is not pinned in $pins" >&2; exit 1; }
    printf '%s=%s ' "$p" "$v"
  done
}
apt_install() { # ROOT PACKAGE...
  local root=$1 packages
  shift
  packages="$(pinned "$@")"
  # Valid-Until is not checked (like this machine's apt): mirrors may serve snapshots.
  in_root "$root" "apt-get -q -o Acquire::Check-Valid-Until=false update
    apt-get -qy install --no-install-recommends $packages"
}

# Removes from ROOT what differs between two builds or belongs to the build host or the
# container runtime (which mounts its own /etc/hosts, resolv.conf, hostname, /dev, /proc).
scrub() {
  local r="${1:?}"
  rm -rf "${r:?}"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/cache/debconf/*-old \
    "$r"/var/lib/dpkg/*-old "$r"/var/cache/ldconfig/aux-cache "$r"/etc/{passwd,group,shadow,gshadow}- \
    "${r:?}"/dev/* "$r"/proc/* "$r"/sys/* "$r"/tmp/* "$r"/var/tmp/* "$r"/etc/hostname
  find "$r/var/log" -type f -delete # logs go; their directories (tomcat's) stay
  find "$r" -xdev -name __pycache__ -prune -exec rm -rf {} +
  if [ -e "$r/etc/machine-id" ]; then : >"$r/etc/machine-id"; fi
  : >"$r/etc/resolv.conf" && chmod 644 "$r/etc/resolv.conf"
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$r/etc/hosts"
  # Last password change, in days: the build day unless fixed.
  sed -i -E "s/^([^:]*:[^:]*:)[0-9]+:/\1$((SOURCE_DATE_EPOCH / 86400)):/" "$r/etc/shadow"
}

# One layer: sorted, numeric owners, every mtime the fixed one, no atime/ctime or
# PID-named headers (pax).
layer_tar() { # ROOT OUT
  tar --create --file="$2" --directory="$1" --sort=name --numeric-owner \
    --mtime="@$SOURCE_DATE_EPOCH" --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime .
}

# docker-archive (what `docker save` writes and containerd imports): manifest.json, the
# config named by its digest, one uncompressed layer. CONFIG: the image's "config" object.
archive() { # ROOT REF CONFIG OUT
  local a="$work/archive" diff cfg
  rm -rf "$a" && mkdir "$a"
  layer_tar "$1" "$a/layer.tar"
  diff="$(sha256sum "$a/layer.tar" | cut -d' ' -f1)"
  mkdir "$a/$diff" && mv "$a/layer.tar" "$a/$diff/layer.tar"
  jq -cS -n --argjson c "$3" --arg d "sha256:$diff" --arg t "$created" \
    '{architecture: "amd64", os: "linux", created: $t, config: $c,
      rootfs: {type: "layers", diff_ids: [$d]},
      history: [{created: $t, created_by: "end2end/images/build.sh"}]}' >"$a/config.json"
  cfg="$(sha256sum "$a/config.json" | cut -d' ' -f1)"
  mv "$a/config.json" "$a/$cfg.json"
  jq -c -n --arg c "$cfg.json" --arg r "$2" --arg l "$diff/layer.tar" \
    '[{Config: $c, RepoTags: [$r], Layers: [$l]}]' >"$a/manifest.json"
  tar --create --file="$work/image.tar" --directory="$a" --sort=name --owner=0 --group=0 \
    --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --format=gnu manifest.json "$cfg.json" "$diff"
  rm -rf "$a"
  mv "$work/image.tar" "$4"
  prune "$(basename "$4" | sed 's/-[0-9a-f]*\.tar$//')-*.tar"
}

# The shared Debian base (minbase + security updates) as a tar, cached on its own recipe
# (the text of the functions that make it), so that changing an image's steps does not
# debootstrap again. Sets base_tar.
base() {
  local r="$work/base"
  base_tar="$dir/base-$suite-$(printf '%s\n' "$mirror" "$(declare -f base ns in_root scrub layer_tar)" |
    sha256sum | cut -c1-16).tar"
  if [ -s "$base_tar" ]; then touch -c "$base_tar" && return 0; fi
  echo "build.sh: debootstrap $suite (once; cached at $base_tar)" >&2
  mkdir "$r"
  ns debootstrap --variant=minbase "$suite" "$r" "$mirror" >&2
  rm -f "$r/etc/apt/sources.list"
  printf '%s\n' "Types: deb" "URIs: $mirror" "Suites: $suite $suite-updates" "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" "" \
    "Types: deb" "URIs: $mirror-security" "Suites: $suite-security" "Components: main" \
    "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" >"$r/etc/apt/sources.list.d/debian.sources"
  # Smaller images: no documentation (but the copyrights), manual pages or translations.
  printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
    'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' \
    >"$r/etc/dpkg/dpkg.cfg.d/excludes"
  # No package may start a service: there is no init in a container (or its build).
  printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
  chmod 755 "$r/usr/sbin/policy-rc.d"
  in_root "$r" "apt-get -q -o Acquire::Check-Valid-Until=false update
    apt-get -qy dist-upgrade"
  scrub "$r"
  layer_tar "$r" "$work/base.tar"
  rm -rf "$r"
  mv "$work/base.tar" "$base_tar"
  prune "base-$suite-*.tar"
}
from_base() { # NAME: a fresh copy of the base at $work/NAME
  base
  mkdir "$work/$1"
  tar --extract --file="$base_tar" --directory="$work/$1" --numeric-owner --same-permissions
}

build_pause() {
  local tag r="$work/pause"
  tag="$(awk '$1 == "TAG" { print $3; exit }' "$pause_src/Makefile")"
  mkdir -p "$r" "$work/pause-src"
  cp "$pause_src/linux/pause.c" "$work/pause-src/"
  # Upstream's flags (build/pause/Makefile); VERSION is what `pause -v` prints.
  (cd "$work/pause-src" && gcc -Os -Wall -Werror -static "-DVERSION=v$tag-$k8s_version" -o "$r/pause" pause.c)
  chmod 755 "$r/pause"
  archive "$r" "${refs[pause]}" "$(jq -cn --arg p "$path_env" \
    '{User: "65535:65535", Entrypoint: ["/pause"], Env: [$p]}')" "$1"
}

build_mariadb() {
  local r="$work/mariadb"
  from_base mariadb
  # mysql is 999:999 as in the official image (and Portico's runAsUser), created before
  # the packages so that their files belong to 999.
  in_root "$r" "groupadd --system --gid 999 mysql
    useradd --system --uid 999 --gid 999 --home-dir /var/lib/mysql --no-create-home --shell /bin/false mysql"
  apt_install "$r" mariadb-server mariadb-client
  install -m 755 "$here/mariadb-entrypoint.sh" "$r/usr/local/bin/docker-entrypoint.sh"
  # Debian's 50-server.cnf binds 127.0.0.1; clients of a Pod come over its IP. The later
  # file wins. No reverse DNS of clients (slow, pointless in a cluster).
  printf '%s\n' '# portico.local/mariadb (end2end/images/build.sh): listen on every address.' \
    '[mariadbd]' 'bind-address = 0.0.0.0' 'port = 3306' 'skip-name-resolve' \
    >"$r/etc/mysql/mariadb.conf.d/99-portico.cnf"
  # An empty datadir (Debian's postinst initialised one) and the socket's directory, 999's.
  rm -rf "$r/var/lib/mysql" "$r/run/mysqld"
  install -d -o 999 -g 999 -m 755 "$r/var/lib/mysql" "$r/run/mysqld"
  scrub "$r"
  archive "$r" "${refs[mariadb]}" "$(jq -cn --arg p "$path_env" \
    '{User: "999:999", Entrypoint: ["/usr/local/bin/docker-entrypoint.sh"], Cmd: ["mariadbd"],
      Env: [$p], ExposedPorts: {"3306/tcp": {}}}')" "$1"
}

# ca-certificates-java's keystore (JKS) stamps each entry with the time it was added: set
# them to SOURCE_DATE_EPOCH and recompute the keystore's digest (SHA-1 over the store
# password, as UTF-16, "Mighty Aphrodite" and the contents; Debian's password: changeit).
jks_fixed_dates() { # FILE
  python3 - "$1" "$SOURCE_DATE_EPOCH" <<'EOF'
import hashlib, struct, sys
path, stamp = sys.argv[1], int(sys.argv[2]) * 1000
b = bytearray(open(path, "rb").read())
salt = "changeit".encode("utf-16-be") + b"Mighty Aphrodite"
assert b[:8] == b"\xfe\xed\xfe\xed\0\0\0\2", "not a JKS keystore, version 2"
assert hashlib.sha1(salt + b[:-20]).digest() == b[-20:], "not Debian's store password"
utf = lambda o: o + 2 + struct.unpack_from(">H", b, o)[0]
o = 12
for _ in range(struct.unpack_from(">I", b, 8)[0]):
    assert struct.unpack_from(">I", b, o)[0] == 2, "not a trusted certificate"
    o = utf(o + 4)  # alias
    struct.pack_into(">q", b, o, stamp)
    o = utf(o + 8)  # certificate type
    o += 4 + struct.unpack_from(">I", b, o)[0]
assert o == len(b) - 20
b[o:] = hashlib.sha1(salt + b[:o]).digest()
open(path, "wb").write(b)
EOF
}

build_tomcat() {
  local r="$work/tomcat" ids java d home=/usr/share/tomcat10 base=/var/lib/tomcat10
  from_base tomcat
  apt_install "$r" tomcat10 default-jre-headless openjdk-17-jre-headless \
    systemd-standalone-sysusers systemd-standalone-tmpfiles
  # Debian's default ROOT webapp answers GET / with 200 (the readiness probe).
  [ -f "$r$base/webapps/ROOT/index.html" ] || { echo "build.sh: tomcat10 installed no ROOT webapp" >&2; exit 1; }
  ids="$(chroot "$r" id -u tomcat):$(chroot "$r" id -g tomcat)"
  java="$(dirname "$(dirname "$(chroot "$r" readlink -f /usr/bin/java)")")"
  jks_fixed_dates "$r/etc/ssl/certs/java/cacerts"
  # Writable by tomcat: logs, work, temp (CATALINA_BASE's, wherever they point).
  for d in logs work temp; do
    d="$(chroot "$r" readlink -f "$base/$d")"
    mkdir -p "$r$d" && chown -R "$ids" "$r$d"
  done
  scrub "$r"
  archive "$r" "${refs[tomcat]}" "$(jq -cn --arg u "$ids" --arg j "$java" \
    --arg p "PATH=$home/bin:${path_env#PATH=}" --arg h "$home" --arg b "$base" \
    '{User: $u, Entrypoint: [$h + "/bin/catalina.sh"], Cmd: ["run"], WorkingDir: $b,
      Env: [$p, "JAVA_HOME=" + $j, "CATALINA_HOME=" + $h, "CATALINA_BASE=" + $b],
      ExposedPorts: {"8080/tcp": {}}}')" "$1"
}

for name in pause mariadb tomcat; do
  if [ ! -s "$(out "$name")" ]; then
    echo "build.sh: building ${refs[$name]}" >&2
    "build_$name" "$(out "$name")"
  fi
done
print
