#!/usr/bin/env bash
# Builds Dex (the tests' identity provider) from the Go module proxy and prints the
# cached binary's path. Called by ../kubernetes/build.sh dex.
#
# Dex's module replaces its gRPC API module with a directory of its own repository
# (./api/v2), which a module zip leaves out, and the proxy serves no version of that
# module matching this Dex. So this builds Dex as the main module from its source, with
# the gRPC admin API left out (one registration in cmd/dex/serve.go; the tests do not
# configure gRPC) and the API module at the release Dex's go.mod names.
set -euo pipefail
out="$1"
version="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
src="$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "github.com/dexidp/dex@$version" \
  | awk -F'"' '$2=="Dir"{print $4}')"
cp -r "$src" "$work/dex"
chmod -R u+w "$work/dex"
cd "$work/dex"
serve=cmd/dex/serve.go
grep -q 'api.RegisterDexServer(grpcSrv, apiserver.NewAPI(' "$serve" \
  || { echo "dex $version: cmd/dex/serve.go no longer registers the gRPC API as expected" >&2; exit 1; }
sed -i -e '/"github.com\/dexidp\/dex\/api\/v2"/d' \
  -e '/"github.com\/dexidp\/dex\/server\/apiserver"/d' \
  -e 's/^\(\s*\)api.RegisterDexServer(grpcSrv, apiserver.NewAPI(.*$/\1_ = grpcSrv \/\/ the gRPC admin API is not built (see end2end\/dex\/build.sh)/' "$serve"
go mod edit -dropreplace=github.com/dexidp/dex/api/v2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$out" \
  -ldflags "-s -w -X main.version=$version" ./cmd/dex
