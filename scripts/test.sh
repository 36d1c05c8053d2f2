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
  # Each clone's own crates add a few GB: start over past 40 GB rather than fill the disk.
  if [ "$(du -sm "$cache" | cut -f1)" -gt 40000 ]; then
    rm -rf "$cache" && mkdir -p "$cache"
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
integration_tests() {
  cargo test --workspace --locked --no-run
  local others=() file area
  for file in end2end/control-plane/tests/*.rs; do others+=(--test "$(basename "$file" .rs)"); done
  cargo test --workspace --locked --lib --bins "${others[@]}"
  for area in $(sed -n 's/^mod \([a-z_]*\);$/\1/p' server/tests/it/main.rs | grep -vx kit); do
    timed "integration: $area" cargo test --workspace --locked --test it -- "$area::"
  done
}
timed "unit and integration tests" integration_tests
# The same areas' API-level checks against the oldest supported minor (1.32).
timed "compatibility run, Kubernetes 1.32 (scripts/compat.sh)" bash scripts/compat.sh
# The binaries the browser runs use (the control plane's launcher, the debug server)
# are the ones `cargo test --workspace --no-run` built for the integration tests: a
# separate `cargo build` would compile the workspace again (two minutes) for the
# feature set without dev-dependencies (tokio's test-util, reqwest's stream), which the
# release build compiles anyway. What ships is the release server and site, built by
# the script the Dockerfile runs; the whole browser suite runs against that directory.
timed "release build (scripts/release.sh)" bash scripts/release.sh
timed "browser tests, release build (Playwright + Chromium)" \
  bash -c 'cd end2end && PORTICO_E2E_BUILD=release npx playwright test'
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
timed "browser tests, debug build: the browser's own logic" bash -c \
  'cd end2end && npx playwright test tests/forms.spec.ts tests/window.spec.ts tests/live.spec.ts tests/navigation.spec.ts'
timed "the image, twice from the release build (scripts/image.sh oci): one digest" bash scripts/image-twice.sh
# Portico deployed as people deploy it, from the release image, in one local cluster:
# `kubectl apply -k deploy/overlays/local` first (rolled out, first page through the
# Ingress), then removed and `helm install deploy/chart`, which the specs run against.
timed "browser tests through the Ingress, release image, kustomize then helm" bash -c \
  'cd end2end && PORTICO_E2E_BUILD=release PORTICO_E2E_DEPLOY=both npx playwright test -c playwright.in-cluster.config.ts'
printf '\nAll checks passed in %ss.\n' "$SECONDS"
