#!/usr/bin/env bash
# Serves Portico on 127.0.0.1:$1 for the browser tests: against $KUBECONFIG's cluster
# when set, otherwise against a fresh local control plane loaded with the seeds.
# Expects `cargo leptos build` and `cargo build -p portico-control-plane` to have run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
port="${1:-3107}"
export PORTICO_LISTEN="127.0.0.1:$port"
export LEPTOS_SITE_ROOT="$root/target/site"
portico="$root/target/debug/portico"
if [ -n "${KUBECONFIG:-}" ]; then
  exec "$portico"
fi
mkdir -p "$root/end2end/.state"
exec "$root/target/debug/portico-control-plane" \
  --apply "$root/deploy/crds" --apply "$root/end2end/fixtures/seeds" --apply "$root/end2end/fixtures/large" \
  --kubeconfig-out "$root/end2end/.state/kubeconfig.json" \
  exec -- "$portico"
