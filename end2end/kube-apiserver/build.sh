#!/usr/bin/env bash
# Builds kube-apiserver (or, with the argument `kubectl`, kubectl) from the Go module
# proxy once per pinned version and caches the binary. Prints the cached binary's path.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
what="${1:-kube-apiserver}"
case "$what" in
  kube-apiserver) package=. ;;
  kubectl) package=./kubectl ;;
  *) echo "usage: build.sh [kube-apiserver|kubectl]" >&2; exit 2 ;;
esac
version="$(awk '$1=="k8s.io/kubernetes"{print $2; exit}' "$here/go.mod")"
minor="$(echo "$version" | cut -d. -f2)"
cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}"
out="$cache/$what-$version"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building $what $version (once; cached at $out)" >&2
  cd "$here"
  CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out.tmp" \
    -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" "$package"
  mv "$out.tmp" "$out"
fi
echo "$out"
