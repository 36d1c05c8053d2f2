#!/usr/bin/env bash
# The compatibility run: the API-level integration areas against the oldest Kubernetes
# minor Portico supports (deploy/README.md, "Kubernetes versions"): kube-apiserver,
# kube-controller-manager and kube-scheduler built from end2end/kubernetes/v1.32 (the
# same module proxy, cached by version), etcd and KWOK as in the main run, simulated
# nodes (a kubelet may not be newer than its API server, and the real node's is 1.35's).
#   deploy       deploy/ applied, its admission policies and RBAC checked by dry runs
#   cluster      CRDs stored as written, discovery, the kind registry
#   live_tables  Table lists and watches, as people's views use them
#   identity     sign-in by token and by OIDC (the authentication configuration 1.32 takes)
#   writes       creates, server-side apply, dry runs, conflicts
#   stacks       the reconciler to Ready, bindings, plans
# Expects the test binary built (`cargo test --workspace --no-run`, as scripts/test.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
minor="${PORTICO_COMPAT_MINOR:-v1.32}"
assets="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}/kubernetes-$minor"
mkdir -p "$assets"
for component in kube-apiserver kube-controller-manager kube-scheduler; do
  ln -sfn "$(bash end2end/kubernetes/build.sh "$component" "$minor")" "$assets/$component"
done
echo "compatibility run: $("$assets/kube-apiserver" --version)" >&2
export KUBEBUILDER_ASSETS="$assets"
# cluster.rs checks that the API server answering is this minor.
export PORTICO_EXPECT_KUBERNETES_MINOR="${minor#v1.}"
for area in ${PORTICO_COMPAT_AREAS:-deploy cluster live_tables identity writes stacks}; do
  cargo test --workspace --locked --test it -- "$area::"
done
