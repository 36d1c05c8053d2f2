#!/usr/bin/env bash
# Runs Portico on http://127.0.0.1:3000. Uses the configured cluster ($KUBECONFIG or
# ~/.kube/config) when there is one; otherwise starts a small local cluster loaded with
# Portico's CRDs and the seed fixtures, and stops it when Portico stops. As root, that
# cluster has a real node where the Stacks people provision really run (images built
# here, deploy/overlays/local/stacks.yaml); otherwise simulated nodes, as it says.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/install.sh

if [ -n "${KUBECONFIG:-}" ] || [ -f "$HOME/.kube/config" ]; then
  exec cargo leptos watch --split
fi
cargo build -p portico-control-plane --locked
mkdir -p .portico
echo "No cluster configured: starting a small local cluster (real control plane and controllers; kubeconfig: .portico/kubeconfig)" >&2
exec target/debug/portico-control-plane \
  --apply deploy/crds --apply end2end/fixtures/seeds \
  --real-node-catalog "$root/deploy/overlays/local/stacks.yaml" \
  --kubeconfig-out .portico/kubeconfig \
  exec -- cargo leptos watch --split
