// Command kube-proxy is upstream kube-proxy built from the same pinned Kubernetes
// version as kube-apiserver: it programs the real node's iptables so that ClusterIP
// and NodePort Services reach Pods.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/restclient"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	os.Exit(cli.Run(app.NewProxyCommand()))
}
