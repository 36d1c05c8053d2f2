#!/usr/bin/env bash
# Portico deployed as people deploy it, on the local cluster's real node: its image
# (scripts/image.sh, from the build PORTICO_E2E_BUILD names: debug or release) and
# Traefik's imported into the node, Traefik as the Ingress controller on the node's
# ports 80 and 443, and Portico's manifests applied; TLS at the Ingress with a
# certificate for portico.test from a test CA made here. PORTICO_E2E_DEPLOY picks how:
# `kustomize` (default: `kubectl apply -k deploy/overlays/local`), `helm` (`helm install`
# of deploy/chart with the same changes as values) or `both` (kustomize rolled out and its
# first page served through the Ingress, then all of it deleted and the chart installed
# in its place: one cluster proves both, the specs run against the chart). Stays up until
# stopped.
#
# When https://portico.test/readyz answers through the Ingress it prints one line:
#   in-cluster ready: ip=NODE_IP spki=SHA256_OF_THE_CERTIFICATE_KEY apply_to_page_ms=N
# (the browser maps portico.test to NODE_IP and trusts that key). Files for the tests
# (admin kubeconfig, CA, image digest) are in end2end/.state/in-cluster/.
# Expects `cargo build -p portico-control-plane` and the chosen build to exist.
set -euo pipefail
shopt -s inherit_errexit # a failed rollout inside $(deploy …) stops the script
umask 022 # the debug bundle's modes, whoever runs this
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
state="$root/end2end/.state/in-cluster"
cache="${PORTICO_CACHE_DIR:-$HOME/.cache/portico}"
host=portico.test
# The name the chart's HTTPRoute serves through Traefik's Gateway (helm installs).
gateway_host=gateway.portico.test
kubectl="$(bash "$root/end2end/kubernetes/build.sh" kubectl)"
rm -rf "$state" && mkdir -p "$state"
log() { echo "in-cluster: $*" >&2; }
# Waits up to $1 seconds for the command after it to succeed (readiness, not timing).
within() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || { log "gave up waiting for: $*"; return 1; }
    sleep 0.5
  done
}

# Portico's image, from exactly the bundle the other browser runs serve.
case "${PORTICO_E2E_BUILD:-debug}" in
  debug)
    bundle="$root/target/debug-bundle"
    rm -rf "$bundle" && mkdir -p "$bundle"
    cp "$root/target/debug/portico" "$root/target/debug/hash.txt" "$bundle/"
    cp -r "$root/target/site" "$bundle/site"
    ;;
  release) bundle="$root/target/bundle" ;;
  *) echo "PORTICO_E2E_BUILD must be debug or release" >&2; exit 2 ;;
esac
bash "$root/scripts/image.sh" oci "$bundle" "$state/portico.oci.tar" portico.local/portico:dev \
  >"$state/image.json"
log "image $(cat "$state/image.json")"

# Traefik's image: its binary alone, configured by end2end/traefik/Dockerfile.
traefik_bin="$(bash "$root/end2end/kubernetes/build.sh" traefik)"
traefik_version="${traefik_bin##*/traefik-}"
# Keyed by what makes it: the binary's version, its Dockerfile and the writer.
recipe="$(cat "$root/end2end/traefik/Dockerfile" "$root/scripts/image/oci.py" | sha256sum | cut -c1-12)"
traefik_image="$cache/images/traefik-$traefik_version-$recipe.oci.tar"
if [ ! -s "$traefik_image" ]; then
  tree="$(mktemp -d)"
  cp "$traefik_bin" "$tree/traefik"
  mkdir -p "$cache/images"
  SOURCE_DATE_EPOCH=1795478400 python3 "$root/scripts/image/oci.py" "$traefik_image.part" \
    "portico.local/traefik:$traefik_version" "$root/end2end/traefik/Dockerfile" "$tree:/" >&2
  mv "$traefik_image.part" "$traefik_image"
  rm -rf "$tree"
fi

# A test CA and portico.test's certificate (what cert-manager would issue).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -keyout "$state/ca.key" -out "$state/ca.crt" -subj "/CN=Portico test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$host" \
  -keyout "$state/tls.key" -out "$state/tls.csr" 2>/dev/null
openssl x509 -req -in "$state/tls.csr" -CA "$state/ca.crt" -CAkey "$state/ca.key" \
  -CAcreateserial -days 2 -out "$state/tls.crt" \
  -extfile <(printf 'subjectAltName=DNS:%s,DNS:%s\nextendedKeyUsage=serverAuth\n' "$host" "$gateway_host") 2>/dev/null
spki="$(openssl x509 -in "$state/tls.crt" -pubkey -noout | openssl pkey -pubin -outform der |
  openssl dgst -sha256 -binary | base64)"

# The cluster, with both images in its node's runtime.
"$root/target/debug/portico-control-plane" --nodes real \
  --image "$state/portico.oci.tar" --image "$traefik_image" \
  --kubeconfig-out "$state/kubeconfig.json" up >"$state/control-plane.out" 2>"$state/control-plane.log" &
plane=$!
trap 'kill -TERM "$plane" 2>/dev/null; wait "$plane" 2>/dev/null' EXIT
trap 'exit 143' TERM INT
until grep -q '^KUBECONFIG=' "$state/control-plane.out"; do
  # A launcher that stopped (an image it could not import) is said at once.
  if ! kill -0 "$plane" 2>/dev/null || [ "$SECONDS" -gt 180 ]; then
    tail -20 "$state/control-plane.log" >&2
    exit 1
  fi
  sleep 0.5
done
export KUBECONFIG="$state/kubeconfig.json"
k() { "$kubectl" "$@"; }
ip="$(k get node portico-node -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')"

# Gateway API's CRDs (standard channel), the version Traefik is built against.
gateway_api="$(cd "$root/end2end/traefik" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/gateway-api)"
k apply --server-side -f "$gateway_api/config/crd/standard/" >&2
k wait --for condition=established --timeout=60s -f "$gateway_api/config/crd/standard/" >&2
k apply -f "$root/end2end/traefik/traefik.yaml" >&2
# The Gateway's certificate, in its own namespace.
k -n traefik create secret tls gateway-tls --cert="$state/tls.crt" --key="$state/tls.key" >&2
# What a site creates once, before the first apply: the session key shared by the
# replicas and the Ingress's certificate.
site_secrets() {
  k create namespace portico >&2
  k -n portico create secret generic portico-session --from-literal=key="$(openssl rand -hex 32)" >&2
  k -n portico create secret tls portico-tls --cert="$state/tls.crt" --key="$state/tls.key" >&2
}
# The local catalog names images built here (the shipped one names official images,
# which cannot be pulled here): the local overlay carries it, helm gets it as a value.
catalog="$root/deploy/overlays/local/stacks.yaml"
install_with() {
  case "$1" in
    kustomize)
      k apply -k "$root/deploy/overlays/local" >&2
      ;;
    helm)
      # The chart with the same changes as the local overlay, as values; and served
      # through the Gateway as well (an HTTPRoute, on a host of its own).
      "$(bash "$root/end2end/kubernetes/build.sh" helm)" install portico "$root/deploy/chart" \
        --namespace portico --set image.repository=portico.local/portico --set image.tag=dev \
        --set ingress.className=traefik --set ingress.host="$host" \
        --set ingress.controllerNamespace=traefik --set-file catalog="$catalog" \
        --set httpRoute.enabled=true --set httpRoute.hostname="$gateway_host" \
        --set 'httpRoute.parentRefs[0].name=public' --set 'httpRoute.parentRefs[0].namespace=traefik' >&2
      ;;
  esac
}
page() { curl -sf --resolve "$host:443:$ip" --cacert "$state/ca.crt" "https://$host/readyz"; }
# Installs, waits for the rollouts and the first page through the Ingress; prints the
# milliseconds from the install to that page.
deploy() {
  local started
  started=$(date +%s%3N)
  install_with "$1"
  k -n portico rollout status deployment/portico --timeout=180s >&2
  k -n portico rollout status deployment/portico-reconciler --timeout=180s >&2
  k -n traefik rollout status deployment/traefik --timeout=180s >&2
  within 120 page
  echo $(($(date +%s%3N) - started))
}
how="${PORTICO_E2E_DEPLOY:-kustomize}"
case "$how" in
  kustomize | helm) ;;
  both)
    site_secrets
    kustomize_ms="$(deploy kustomize)"
    log "kustomize: first page through the Ingress ${kustomize_ms} ms after the apply"
    # Everything the overlay made goes, its namespace (and the site's secrets) with it;
    # the chart then installs on a cluster as it was before.
    k delete -k "$root/deploy/overlays/local" --wait=true --timeout=180s >&2
    within 120 sh -c "! '$kubectl' get namespace portico"
    how=helm
    ;;
  *) echo "PORTICO_E2E_DEPLOY must be kustomize, helm or both" >&2; exit 2 ;;
esac
site_secrets
elapsed="$(deploy "$how")"
if [ "$how" = helm ]; then
  # The chart's own checks, as an operator runs them after an install: Portico's image
  # asks the portal's Service for /readyz and reads the reconciler's Lease.
  "$(bash "$root/end2end/kubernetes/build.sh" helm)" test portico --namespace portico --logs >&2
  log "helm test: the portal answers and a reconciler holds its Lease"
  # Gateway API: the same portal through Traefik's Gateway, by the HTTPRoute's host.
  through_gateway() { curl -sf --resolve "$gateway_host:443:$ip" --cacert "$state/ca.crt" "https://$gateway_host/readyz"; }
  within 120 through_gateway
  log "gateway: https://$gateway_host/readyz answers through the HTTPRoute"
fi
echo "in-cluster ready: ip=$ip spki=$spki apply_to_page_ms=$elapsed"
wait "$plane"
