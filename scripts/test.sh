#!/usr/bin/env bash
# Runs every test: formatting, lints, unit and integration tests against a real
# kube-apiserver, the browser suite in Chromium against the release build that ships
# (scripts/release.sh), the specs whose client code only the debug build checks
# (overflow checks, debug assertions) against the debug build, and Portico's own image
# deployed in a local cluster behind an Ingress, with kustomize and then with Helm.
# Installs what is missing first. docs/ci.md says what each step checks and how long it
# takes. With KUBECONFIG set, integration and browser tests use that cluster instead of
# a local control plane.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

timed() {
  local label="$1"; shift
  local start=$SECONDS
  printf '\n==> %s\n' "$label"
  "$@"
  printf '<== %s: %ss\n' "$label" "$((SECONDS - start))"
}

# A fresh clone (CI's) builds in a target directory kept in the cache, so the
# dependencies the last run compiled are not compiled again (cargo's fingerprints decide
# what is fresh; this checkout's own crates always build anew). A checkout that already
# has its own target/ keeps it.
shared_target() {
  local cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/target"
  [ -e target ] || [ -L target ] || [ -n "${CARGO_TARGET_DIR:-}" ] && return 0
  mkdir -p "$cache"
  # A clone's own crates compile anew whatever rustc kept for another directory, so
  # incremental caches only fill the disk here (they had grown to 23 GB). The release
  # server's half keeps its own (scripts/release.sh builds it in one fixed directory).
  export CARGO_INCREMENTAL=0
  # Past 40 GB, drop the debug builds' incremental caches (developers' checkouts refill
  # theirs once); start over only if that is not enough, since starting over costs the
  # next run every dependency (about 25 minutes).
  if [ "$(du -sm "$cache" | cut -f1)" -gt 40000 ]; then
    find "$cache" -mindepth 2 -maxdepth 3 -type d -name incremental \
      -not -path "$cache/release/incremental" -prune -exec rm -rf {} +
    if [ "$(du -sm "$cache" | cut -f1)" -gt 40000 ]; then
      rm -rf "$cache" && mkdir -p "$cache"
    fi
  fi
  ln -s "$cache" target
  echo "target -> $cache"
}

timed "install prerequisites" bash scripts/install.sh --for-tests
timed "build cache" shared_target
timed "cargo fmt --check" cargo fmt --all -- --check
timed "clippy (server side)" cargo clippy --workspace --all-targets --locked -- -D warnings
timed "clippy (browser side)" cargo clippy -p app --features hydrate --target wasm32-unknown-unknown --locked -- -D warnings
# Unit tests of every crate and the control plane's own tests; then the server's one
# integration-test binary (server/tests/it), an area per process so that each starts
# its own local clusters, as when every area was a binary of its own. Every command
# names the whole workspace: a narrower selection unifies features differently and
# compiles the server again (two minutes).
#
# Once compiled, they run in two lanes at once: the unit tests (the control plane's
# start real nodes) and the real node's areas (containers, which mostly wait for
# databases and probes) beside the simulated nodes' areas and then the same API-level
# areas against Kubernetes 1.32 (scripts/compat.sh). Each area has clusters, ports and
# paths of its own; only one real node runs at a time. A lane's output is printed
# whole when it ends, so the log reads as if they had run one after the other.
REAL_NODE_AREAS="real_node live_logs"
area() { timed "integration: $1" cargo test --workspace --locked --test it -- "$1::"; }
real_node_lane() {
  local others=() file one
  for file in end2end/control-plane/tests/*.rs; do others+=(--test "$(basename "$file" .rs)"); done
  timed "unit tests, and the control plane's" cargo test --workspace --locked --lib --bins "${others[@]}"
  for one in $REAL_NODE_AREAS; do area "$one"; done
}
simulated_lane() {
  local one
  for one in $(sed -n 's/^mod \([a-z_]*\);$/\1/p' server/tests/it/main.rs | grep -vx kit); do
    [[ " $REAL_NODE_AREAS " == *" $one "* ]] || area "$one"
  done
  # The same areas' API-level checks against the oldest supported minor (1.32).
  timed "compatibility run, Kubernetes 1.32 (scripts/compat.sh)" bash scripts/compat.sh
}
integration_tests() {
  cargo test --workspace --locked --no-run
  # Each lane is a subshell of its own under `set -e`: it stops at its first failure.
  local logs real simulated real_status=0 simulated_status=0
  logs="$(mktemp -d)"
  real_node_lane > "$logs/real" 2>&1 &
  real=$!
  simulated_lane > "$logs/simulated" 2>&1 &
  simulated=$!
  wait "$simulated" || simulated_status=$?
  wait "$real" || real_status=$?
  cat "$logs/simulated" "$logs/real"
  rm -rf "$logs"
  [ "$simulated_status" -eq 0 ] && [ "$real_status" -eq 0 ]
}
timed "unit and integration tests, then Kubernetes 1.32 (two lanes at once)" integration_tests
# The binaries the browser runs use (the control plane's launcher, the debug server)
# are the ones `cargo test --workspace --no-run` built for the integration tests: a
# separate `cargo build` would compile the workspace again (two minutes) for the
# feature set without dev-dependencies (tokio's test-util, reqwest's stream), which the
# release build compiles anyway. What ships is the release server and site, built by
# the script the Dockerfile runs; the whole browser suite runs against that directory.
timed "release build (scripts/release.sh)" bash scripts/release.sh
# The debug build checks what the release build compiles out (integer overflow, debug
# assertions, Leptos' debug-only checks) in the browser's own code: the specs that run
# most of it (forms and their validation, the row window's arithmetic, live updates,
# navigation). Only the wasm bundle and styles come from cargo-leptos: letting it build
# the server too would compile it again with a different feature set.
debug_bundle() {
  rm -rf target/site
  cargo leptos build --frontend-only --split
}
timed "build the debug browser bundle (cargo leptos build --frontend-only --split)" debug_bundle
# One Playwright run on one local cluster: the whole suite against the release build,
# then those specs against a debug server on the same cluster
# (end2end/playwright.config.ts).
timed "browser tests: release build, then the browser's own logic on the debug build" \
  bash -c 'cd end2end && PORTICO_E2E_BUILD=release PORTICO_E2E_ALSO_DEBUG=1 npx playwright test'
timed "the image, twice from the release build (scripts/image.sh oci): one digest" bash scripts/image-twice.sh
# Portico deployed as people deploy it, from the release image, in one local cluster:
# `kubectl apply -k deploy/overlays/local` first (rolled out, first page through the
# Ingress), then removed and `helm install deploy/chart`, which the specs run against.
timed "browser tests through the Ingress, release image, kustomize then helm" bash -c \
  'cd end2end && PORTICO_E2E_BUILD=release PORTICO_E2E_DEPLOY=both npx playwright test -c playwright.in-cluster.config.ts'
printf '\nAll checks passed in %ss.\n' "$SECONDS"
