#!/usr/bin/env bash
# Builds one component of the local cluster from source through the Go module proxy,
# once per pinned version, and caches the binary; prints the cached binary's path.
#   kube-apiserver (default), kube-controller-manager, kube-scheduler, kubectl:
#     the wrapper module here, pinned to one Kubernetes version; they share packages,
#     so Go's build cache compiles the common ones once. A second argument names an
#     older minor's module file for the same wrappers (`build.sh kube-apiserver v1.32`:
#     ./v1.32/go.mod, the oldest supported, for the compatibility run; control plane only).
#   kubelet, kube-proxy: the real node's agents, from the same wrapper module.
#   kwok: KWOK's controller (simulated nodes), pinned in ../kwok/go.mod.
#   coredns: the cluster's DNS on the real node, pinned in ../coredns/go.mod.
#   metrics-server: metrics.k8s.io from the real node's kubelet, pinned in
#     ../metrics-server/go.mod.
#   traefik: the local cluster's Ingress controller, pinned in ../traefik/go.mod.
#   helm: installs deploy/chart in the in-cluster tests, pinned in ../helm/go.mod.
#   actionlint: checks the release workflows, pinned in ../actionlint/go.mod.
#   helm-docs: writes the chart's README from its values, pinned in ../helm-docs/go.mod.
#   jaeger: the tests' trace collector (OTLP in, a query API out), pinned in
#     ../jaeger/go.mod.
#   dex: the tests' identity provider (OpenID Connect), pinned in ../dex/version and
#     built by ../dex/build.sh.
# A component is rebuilt only when its pin changes (the version is in the file name).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
what="${1:-kube-apiserver}"
pinned() { awk -v m="$2" '$1==m{print $2; exit}' "$1"; }
case "$what" in
  kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy)
    module="$here"
    package="./$what"
    # The same wrappers against an older minor's module file (-modfile).
    modfile="$here/${2:-.}/go.mod"
    [ -f "$modfile" ] || { echo "build.sh: no $modfile" >&2; exit 2; }
    version="$(pinned "$modfile" k8s.io/kubernetes)"
    minor="$(echo "$version" | cut -d. -f2)"
    ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
    ;;
  kwok)
    module="$here/../kwok"
    package=sigs.k8s.io/kwok/cmd/kwok
    version="$(pinned "$module/go.mod" sigs.k8s.io/kwok)"
    ldflags="-s -w"
    ;;
  coredns)
    module="$here/../coredns"
    package=github.com/coredns/coredns
    version="$(pinned "$module/go.mod" github.com/coredns/coredns)"
    ldflags="-s -w"
    ;;
  metrics-server)
    module="$here/../metrics-server"
    package=sigs.k8s.io/metrics-server/cmd/metrics-server
    version="$(pinned "$module/go.mod" sigs.k8s.io/metrics-server)"
    ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=$version"
    ;;
  traefik)
    module="$here/../traefik"
    package=github.com/traefik/traefik/v3/cmd/traefik
    version="$(pinned "$module/go.mod" github.com/traefik/traefik/v3)"
    ldflags="-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$version"
    ;;
  helm)
    module="$here/../helm"
    package=helm.sh/helm/v4/cmd/helm
    version="$(pinned "$module/go.mod" helm.sh/helm/v4)"
    ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version"
    ;;
  actionlint)
    module="$here/../actionlint"
    package=github.com/rhysd/actionlint/cmd/actionlint
    version="$(pinned "$module/go.mod" github.com/rhysd/actionlint)"
    ldflags="-s -w -X github.com/rhysd/actionlint.version=$version"
    ;;
  helm-docs)
    module="$here/../helm-docs"
    package=github.com/norwoodj/helm-docs/cmd/helm-docs
    version="$(pinned "$module/go.mod" github.com/norwoodj/helm-docs)"
    ldflags="-s -w"
    ;;
  jaeger)
    module="$here/../jaeger"
    package=github.com/jaegertracing/jaeger/cmd/jaeger
    version="$(pinned "$module/go.mod" github.com/jaegertracing/jaeger)"
    ldflags="-s -w"
    ;;
  dex)
    version="$(tr -d '[:space:]' < "$here/../dex/version")"
    ;;
  *) echo "usage: build.sh [kube-apiserver|kube-controller-manager|kube-scheduler|kubectl|kubelet|kube-proxy|kwok|coredns|metrics-server|traefik|helm|actionlint|helm-docs|jaeger|dex]" >&2; exit 2 ;;
esac
cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}"
out="$cache/$what-$version"
if [ ! -x "$out" ]; then
  mkdir -p "$cache"
  echo "building $what $version from source (once; cached at $out)" >&2
  if [ "$what" = dex ]; then
    bash "$here/../dex/build.sh" "$out.tmp.$$" "$version"
  else
    cd "$module"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build ${modfile:+-modfile="$modfile"} -trimpath -o "$out.tmp.$$" -ldflags "$ldflags" "$package"
  fi
  mv "$out.tmp.$$" "$out"
fi
if [ "$what" = kwok ] && [ ! -s "$out.stages.yaml" ]; then
  # The bare kwok controller simulates nothing without stages: take the ones kwokctl
  # uses by default (node initialise + heartbeat with lease; pod ready, complete,
  # delete) from the same pinned module, as one config file beside the binary.
  dir="$(cd "$module" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
  for stage in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
      pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    echo "---"
    cat "$dir/kustomize/stage/$stage.yaml"
  done > "$out.stages.yaml.tmp"
  mv "$out.stages.yaml.tmp" "$out.stages.yaml"
fi
echo "$out"
