// Command kube-controller-manager is upstream kube-controller-manager built from the same
// pinned Kubernetes version as kube-apiserver, through the module proxy: the local
// cluster's Deployments, StatefulSets, garbage collection and namespaces need it.
package main

import (
	"os"
	_ "time/tzdata" // CronJob time zones, as upstream's main imports it

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
