// The real-world CRD corpus: projects' published Go modules that carry their CRD
// manifests. Nothing here is built; `fetch.sh` downloads each module through the Go
// module proxy into the module cache (as envtest does), and the tests read the
// manifests from there. corpus.yaml says which files; README.md lists them.
module portico.local/crd-corpus

go 1.25.0

require (
	github.com/argoproj/argo-cd/v3 v3.5.7
	github.com/argoproj/argo-rollouts v1.10.1
	github.com/cert-manager/cert-manager v1.21.2
	github.com/external-secrets/external-secrets v1.3.2
	github.com/fluxcd/source-controller v1.9.6
	github.com/kedacore/keda/v2 v2.21.0
	github.com/kyverno/kyverno v1.19.1
	github.com/prometheus-operator/prometheus-operator v0.85.0
	istio.io/api v1.31.1
	k8s.io/autoscaler/vertical-pod-autoscaler v1.8.1
	sigs.k8s.io/gateway-api v1.6.3
)
