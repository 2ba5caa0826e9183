// Command kube-apiserver-build builds the kube-apiserver that the Kubernetes
// tests run (internal/testkit/kubeapiserver), unless it is cached, and prints
// its path and how long it took. .ci/run starts it beside make test, so that
// make check finds the binary built.
//
//	cd internal/testkit && go run ./cmd/kube-apiserver-build
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/kubeapiserver"
)

func main() {
	start := time.Now()
	path, err := kubeapiserver.Binary(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s (%v)\n", path, time.Since(start).Round(time.Second))
}
