#!/usr/bin/env bash
# Installs what Portico needs to build and run, skipping whatever is already there.
#   (no flag)     the build tools, and the local control plane when no cluster is configured
#   --for-build   the build tools only (what scripts/release.sh and the image need)
#   --for-tests   everything the test suite needs (Chromium, Playwright, the control plane)
# Idempotent: a second run does nothing but check.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
for_tests=false
control_plane=true
case "${1:-}" in
  --for-tests) for_tests=true ;;
  --for-build) control_plane=false ;;
  "") [ -n "${KUBECONFIG:-}" ] && control_plane=false ;;
  *) echo "usage: $0 [--for-build|--for-tests]" >&2; exit 2 ;;
esac

step() { printf '\n==> %s\n' "$*" >&2; }

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  step "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
}

command -v cargo >/dev/null || { echo "Rust is required: https://rustup.rs" >&2; exit 1; }

# The local cluster's real node needs root (namespaces, cgroups, veth): without it
# the local cluster runs simulated nodes only, and says so when it starts.
real_node=false
[ "$(id -u)" = 0 ] && real_node=true

# Debian's packages first, in one go (apt takes one lock: nothing else installs
# while the builds below run side by side).
packages=()
command -v npm >/dev/null || packages+=(nodejs npm)
if $control_plane || $for_tests; then
  command -v go >/dev/null || packages+=(golang-go)
fi
if $control_plane && $real_node; then
  packages+=(containerd runc containernetworking-plugins tini socat iproute2 iptables util-linux debootstrap)
fi
$for_tests && packages+=(chromium mariadb-client yamllint)
[ ${#packages[@]} -eq 0 ] || apt_install "${packages[@]}"

# The Go builds (the local cluster's components, the images, the test tools) run in the
# background beside the Rust installs: each leaves a core idle much of the time (a
# single crate or a link), and the downloads overlap the compiles.
go_builds() {
  if $control_plane; then
    components=(kube-apiserver kube-controller-manager kube-scheduler kwok)
    if $real_node; then
      # The real node: containerd, runc and the CNI plugins from Debian; kubelet,
      # kube-proxy, CoreDNS, metrics-server (metrics.k8s.io) and Traefik (the Ingress
      # controller) built like the rest; its images built from Debian packages
      # (end2end/images/build.sh: no registry is reachable).
      components+=(kubelet kube-proxy coredns metrics-server traefik)
    fi
    # The local cluster's components, built from source through the module proxy once
    # per pinned version (end2end/kubernetes/go.mod, end2end/kwok/go.mod,
    # end2end/coredns/go.mod). An envtest KUBEBUILDER_ASSETS directory supplies what it
    # has (etcd, kube-apiserver).
    for component in "${components[@]}"; do
      if [ -n "${KUBEBUILDER_ASSETS:-}" ]; then
        [ -x "$KUBEBUILDER_ASSETS/$component" ] && continue
        echo "$component is not in KUBEBUILDER_ASSETS ($KUBEBUILDER_ASSETS): building it from source" >&2
      fi
      end2end/kubernetes/build.sh "$component" >/dev/null
    done
    if $real_node; then
      step "the real node's images (end2end/images/build.sh; cached)"
      bash end2end/images/build.sh >/dev/null
    fi
  fi

  if $for_tests; then
    # kubectl from the same pinned Kubernetes version (the tables are compared with its
    # output), and the real-world CRD corpus's modules, both through the Go module proxy.
    end2end/kubernetes/build.sh kubectl >/dev/null
    # Helm renders and installs deploy/chart in the tests (same proxy, pinned).
    end2end/kubernetes/build.sh helm >/dev/null
    # Dex: the OpenID Connect provider the single sign-on tests sign in through.
    end2end/kubernetes/build.sh dex >/dev/null
    # Jaeger (the collector the traces tests send to), helm-docs (the chart's README)
    # and actionlint (the release workflows): here, beside the Rust builds, rather than
    # at their first test.
    for tool in jaeger helm-docs actionlint; do
      end2end/kubernetes/build.sh "$tool" >/dev/null
    done
    # The oldest supported minor's control plane, for the compatibility run.
    for component in kube-apiserver kube-controller-manager kube-scheduler; do
      end2end/kubernetes/build.sh "$component" v1.32 >/dev/null
    done
    step "the CRD corpus's Go modules (end2end/crd-corpus)"
    bash end2end/crd-corpus/fetch.sh >/dev/null
  fi
}
go_builds &
go_pid=$!
# A failure here stops them too.
trap 'kill "$go_pid" 2>/dev/null || true' EXIT

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi

# cargo-leptos 0.3.11 needs rustc 1.96; 0.3.10 is the newest that builds on 1.95.
if ! cargo leptos --version 2>/dev/null | grep -q ' 0\.3\.10$'; then
  # Its own release profile asks for fat LTO in one codegen unit (about 20 minutes on 2
  # cores); a build tool needs neither, and config overrides the manifest's profile.
  step "cargo install cargo-leptos 0.3.10 (once)"
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo install cargo-leptos --version 0.3.10 --locked
fi

# The CLI must match the wasm-bindgen crate in Cargo.lock exactly, or cargo-leptos
# tries to download one. Its own lockfile names a crate the registry lacks: no --locked.
wbg="$(awk '$0=="name = \"wasm-bindgen\""{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)"
if ! wasm-bindgen --version 2>/dev/null | grep -q " $wbg\$"; then
  step "cargo install wasm-bindgen-cli $wbg"
  cargo install wasm-bindgen-cli --version "$wbg"
fi

# wasm-opt for release wasm builds: binaryen pinned in scripts/binaryen/package.json,
# from the npm registry. Debian's binaryen (108) predates the reference-types table
# rustc emits and corrupts it (the page then fails to hydrate), so it is never used:
# scripts/release.sh puts this one first on PATH and checks its version.
binaryen=scripts/binaryen
if ! cmp -s "$binaryen/package-lock.json" "$binaryen/node_modules/.installed-from-lock" 2>/dev/null; then
  step "npm ci in $binaryen (binaryen's wasm-opt)"
  (cd "$binaryen" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$binaryen/package-lock.json" "$binaryen/node_modules/.installed-from-lock"
fi

# xterm.js for the terminal into a container, pinned in scripts/xterm/package.json:
# its browser files go into the site (public/xterm/, not committed), fetched by the
# page only when a terminal opens.
xterm=scripts/xterm
if ! cmp -s "$xterm/package-lock.json" "$xterm/node_modules/.installed-from-lock" 2>/dev/null \
  || [ ! -f public/xterm/xterm.mjs.gz ]; then
  step "npm ci in $xterm (xterm.js for terminals)"
  (cd "$xterm" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$xterm/package-lock.json" "$xterm/node_modules/.installed-from-lock"
  mkdir -p public/xterm
  cp "$xterm/node_modules/@xterm/xterm/lib/xterm.mjs" \
    "$xterm/node_modules/@xterm/xterm/css/xterm.css" \
    "$xterm/node_modules/@xterm/addon-fit/lib/addon-fit.mjs" public/xterm/
  # Served gzipped where the browser accepts it (345 KB of script is 88 KB so).
  gzip -9 -k -n -f public/xterm/xterm.mjs public/xterm/xterm.css public/xterm/addon-fit.mjs
fi

if $for_tests; then
  if [ ! -d end2end/node_modules/@playwright/test ]; then
    step "npm ci (Playwright's test runner; browsers come from Debian)"
    (cd end2end && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  fi
fi

if ! wait "$go_pid"; then
  echo "install: building the local cluster's components failed (see above)" >&2
  exit 1
fi
