// Command kube-apiserver wraps the upstream kube-apiserver so that it can be
// built from the Go module proxy (k8s.io/kubernetes cannot be `go install`ed).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
