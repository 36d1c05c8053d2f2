#!/usr/bin/env bash
# Downloads every module go.mod requires through the Go module proxy into the module
# cache (nothing is built), and prints each one's directory: `module version dir`.
# Idempotent: a cached module costs nothing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
awk '/^require \(/{inside=1; next} inside && /^\)/{inside=0} inside && NF>=2 {print $1, $2}' "$here/go.mod" |
while read -r module version; do
  # Outside any module, so only this module is fetched, not its dependency graph.
  dir="$(cd / && GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "could not download $module@$version" >&2
    exit 1
  fi
  echo "$module $version $dir"
done
