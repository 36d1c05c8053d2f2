#!/usr/bin/env bash
# Runs every test: formatting, lints, unit and integration tests against a real
# kube-apiserver, and the browser tests in Chromium against the debug build and against
# the release build that ships (scripts/release.sh). Installs what is missing first.
# With KUBECONFIG set, integration and browser tests use that cluster instead of a
# local control plane.
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

timed "install prerequisites" bash scripts/install.sh --for-tests
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
    cargo test --workspace --locked --test it -- "$area::"
  done
}
timed "unit and integration tests" integration_tests
# Binaries with the workspace's feature set (what the tests just built, so nearly free),
# then only the wasm bundle and styles from cargo-leptos: letting it build the server
# too would compile it again with a different feature set.
timed "build the binaries" cargo build --workspace --locked
timed "build the browser bundle (cargo leptos build --frontend-only --split)" cargo leptos build --frontend-only --split
timed "browser tests, debug build (Playwright + Chromium)" bash -c 'cd end2end && npx playwright test'
# Portico deployed as people deploy it: its image (from the debug build) in the local
# cluster by `kubectl apply -k deploy/overlays/local`, behind Traefik with TLS.
timed "browser tests through the Ingress, debug image, kustomize" \
  bash -c 'cd end2end && npx playwright test -c playwright.in-cluster.config.ts'
# What ships: the release server and site, built by the script the Dockerfile runs,
# then the same browser suite against that exact directory.
timed "release build (scripts/release.sh)" bash scripts/release.sh
timed "browser tests, release build" bash -c 'cd end2end && PORTICO_E2E_BUILD=release npx playwright test'
timed "the image, twice from the release build (scripts/image.sh oci): one digest" bash scripts/image-twice.sh
timed "browser tests through the Ingress, release image, helm install" bash -c \
  'cd end2end && PORTICO_E2E_BUILD=release PORTICO_E2E_DEPLOY=helm npx playwright test -c playwright.in-cluster.config.ts'
printf '\nAll checks passed in %ss.\n' "$SECONDS"
