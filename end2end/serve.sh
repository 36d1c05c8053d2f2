#!/usr/bin/env bash
# Serves Portico on 127.0.0.1:$1 for the browser tests: against $KUBECONFIG's cluster
# when set, otherwise against a fresh local cluster with a real node (root needed),
# loaded with the seeds, and with an identity provider (Dex) the API server trusts; or
# against the local cluster scripts/check.sh keeps running (PORTICO_E2E_CLUSTER).
# PORTICO_E2E_BUILD picks what is served: `debug` (default: target/debug/portico with
# target/site, after `cargo leptos build --frontend-only`) or `release` (the directory
# scripts/release.sh assembles, exactly what the image holds).
# Expects `cargo build -p portico-control-plane` to have run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${1:-3107}"
export PORTICO_LISTEN="127.0.0.1:$port"
case "${PORTICO_E2E_BUILD:-debug}" in
  debug) portico="$root/target/debug/portico"; export PORTICO_SITE_ROOT="$root/target/site" ;;
  release) portico="$root/target/bundle/portico"; export PORTICO_SITE_ROOT="$root/target/bundle/site" ;;
  *) echo "PORTICO_E2E_BUILD must be debug or release" >&2; exit 2 ;;
esac
# A local cluster kept running by scripts/check.sh: its corpus and identity provider
# files are already in .state.
if [ -n "${PORTICO_E2E_CLUSTER:-}" ]; then
  export KUBECONFIG="$PORTICO_E2E_CLUSTER"
  export PORTICO_STACK_CATALOG="$root/deploy/overlays/local/stacks.yaml"
  exec "$portico"
fi
if [ -n "${KUBECONFIG:-}" ]; then
  rm -f "$root/end2end/.state/corpus.json" "$root/end2end/.state/identity-provider.json"
  exec "$portico"
fi
mkdir -p "$root/end2end/.state"
# A real node: the Stacks the tests provision run (local catalog, images built here).
exec "$root/target/debug/portico-control-plane" --nodes real \
  --real-node-catalog "$root/deploy/overlays/local/stacks.yaml" \
  --apply "$root/deploy/crds" --apply "$root/end2end/fixtures/seeds" --apply "$root/end2end/fixtures/large" \
  --corpus "$root/end2end/crd-corpus" --corpus-out "$root/end2end/.state/corpus.json" \
  --kubeconfig-out "$root/end2end/.state/kubeconfig.json" \
  --identity-provider-out "$root/end2end/.state/identity-provider.json" \
  exec -- "$portico"
