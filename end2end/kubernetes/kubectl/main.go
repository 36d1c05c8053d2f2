// Command kubectl is upstream kubectl built from the same pinned Kubernetes version as
// kube-apiserver (through the module proxy): the tests compare Portico's tables with
// its `kubectl get -o wide` output.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
