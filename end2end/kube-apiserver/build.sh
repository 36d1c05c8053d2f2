#!/usr/bin/env bash
# Builds kube-apiserver from the Go module proxy once per pinned version and caches the binary.
# Prints the path of the cached binary on stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")"
minor="$(echo "$version" | cut -d. -f2)"
cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}"
out="$cache/kube-apiserver-$version"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building kube-apiserver $version (once; cached at $out)" >&2
  cd "$here"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" .
  mv "$out.tmp" "$out"
fi
echo "$out"
