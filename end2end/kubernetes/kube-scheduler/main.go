// Command kube-scheduler is upstream kube-scheduler built from the same pinned Kubernetes
// version as kube-apiserver, through the module proxy: it places the local cluster's
// Pods on its simulated (KWOK) nodes.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	os.Exit(cli.Run(app.NewSchedulerCommand()))
}
