#!/usr/bin/env bash
# Writes deploy/chart/README.md from the chart's values and their `# --` comments
# (helm-docs, built from the Go module proxy); `--check` only says whether it is current.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
helm_docs="$(bash "$root/end2end/kubernetes/build.sh" helm-docs)"
cd "$root/deploy/chart"
if [ "${1:-}" = --check ]; then
  "$helm_docs" --log-level warning --dry-run | diff -u README.md - >&2 || {
    echo "deploy/chart/README.md is out of date: run bash scripts/chart-readme.sh" >&2
    exit 1
  }
else
  "$helm_docs" --log-level warning
fi
