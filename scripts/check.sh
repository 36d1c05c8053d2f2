#!/usr/bin/env bash
# The quick loop: the checks of one area against a local cluster left running between
# runs (the one the browser suite starts: real node, Portico's CRDs, the seeds, the CRD
# corpus, Dex), so a one-line change costs its own compile and its own tests only.
#
#   scripts/check.sh cluster           start that cluster (or say it is up); prints its KUBECONFIG
#   scripts/check.sh stop              stop it
#   scripts/check.sh server AREA [T]   one integration area (server/tests/it/AREA.rs), or
#                                      its tests whose names contain T
#   scripts/check.sh unit [T]          every crate's unit tests (whose names contain T)
#   scripts/check.sh browser SPEC...   browser specs (end2end/tests/SPEC.spec.ts), debug build
#   scripts/check.sh in-cluster        the image through the Ingress (a cluster of its own:
#                                      stops the running one, there is one real node per machine)
#
# Tests that need what only a cluster of their own has (restarting its API server, its own
# identity provider) skip against the running cluster, as against any KUBECONFIG; the
# whole suite (scripts/test.sh) runs them.
set -euo pipefail
shopt -s inherit_errexit
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export PATH="$HOME/.cargo/bin:$PATH"
state="$root/.portico/dev-cluster"
kubeconfig="$state/kubeconfig.json"

running() { [ -s "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null && [ -s "$kubeconfig" ]; }

start_cluster() {
  if running; then
    echo "the local cluster is up: KUBECONFIG=$kubeconfig" >&2
    return 0
  fi
  bash scripts/install.sh --for-tests
  cargo build --workspace --locked
  rm -rf "$state" && mkdir -p "$state"
  # The options end2end/serve.sh gives it, kept up in the background.
  setsid target/debug/portico-control-plane --nodes real \
    --real-node-catalog "$root/deploy/overlays/local/stacks.yaml" \
    --apply "$root/deploy/crds" --apply "$root/end2end/fixtures/seeds" \
    --apply "$root/end2end/fixtures/large" \
    --corpus "$root/end2end/crd-corpus" --corpus-out "$state/corpus.json" \
    --kubeconfig-out "$kubeconfig" \
    --identity-provider-out "$state/identity-provider.json" \
    up >"$state/out" 2>"$state/log" </dev/null &
  echo $! >"$state/pid"
  until grep -q '^KUBECONFIG=' "$state/out"; do
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      tail -20 "$state/log" >&2
      echo "the local cluster did not start (log: $state/log)" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "the local cluster is up: KUBECONFIG=$kubeconfig (log: $state/log)" >&2
}

stop_cluster() {
  if running; then
    kill -TERM "$(cat "$state/pid")"
    while kill -0 "$(cat "$state/pid")" 2>/dev/null; do sleep 0.2; done
  fi
  rm -rf "$state"
}

case "${1:-}" in
  cluster)
    start_cluster
    echo "KUBECONFIG=$kubeconfig"
    ;;
  stop) stop_cluster ;;
  server)
    area="${2:?which area: one of $(sed -n 's/^mod \([a-z_]*\);$/\1/p' server/tests/it/main.rs | grep -vx kit | tr '\n' ' ')}"
    if [ "$area" = stacks ]; then
      # The reconciler's tests run Stacks on simulated nodes of a cluster of their own
      # (KWOK), started by the tests themselves in seconds.
      env -u KUBECONFIG cargo test --workspace --locked --test it -- "$area::${3:-}"
    else
      start_cluster
      KUBECONFIG="$kubeconfig" cargo test --workspace --locked --test it -- "$area::${3:-}"
    fi
    ;;
  unit)
    # The whole workspace's selection, filtered by name: `-p CRATE` would unify features
    # differently and compile the server again.
    cargo test --workspace --locked --lib --bins -- ${2:+"$2"}
    ;;
  browser)
    shift
    [ $# -gt 0 ] || { echo "which spec: $(cd end2end/tests && ls -- *.spec.ts | sed 's/\.spec\.ts//' | tr '\n' ' ')" >&2; exit 2; }
    specs=()
    for spec in "$@"; do specs+=("tests/${spec%.spec.ts}.spec.ts"); done
    start_cluster
    cargo build --workspace --locked
    cargo leptos build --frontend-only --split
    # end2end/serve.sh serves the debug build against this cluster, keeping its corpus
    # and identity provider for the specs.
    mkdir -p end2end/.state
    cp "$kubeconfig" end2end/.state/kubeconfig.json
    cp "$state/corpus.json" "$state/identity-provider.json" end2end/.state/
    (cd end2end && PORTICO_E2E_CLUSTER="$kubeconfig" npx playwright test "${specs[@]}")
    ;;
  in-cluster)
    stop_cluster
    cargo build --workspace --locked
    cargo leptos build --frontend-only --split
    (cd end2end && npx playwright test -c playwright.in-cluster.config.ts)
    ;;
  *)
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
