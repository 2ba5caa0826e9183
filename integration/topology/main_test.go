package topology_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// galeraNodes is the size of the shared cluster: the smallest that keeps a
// primary component when one node is killed.
const galeraNodes = 3

// The Galera cluster the tests of this binary share, started by the first test
// that asks for it and stopped by TestMain.
var (
	galeraOnce    sync.Once
	galeraCluster *privatedb.Galera
	galeraErr     error
	galeraLogs    string
)

// sharedGalera returns the cluster, starting it on first use. Without Debian's
// galera-4 (or mariadb-server), t fails with the package to install.
func sharedGalera(t *testing.T) *privatedb.Galera {
	t.Helper()
	galeraOnce.Do(func() {
		galeraLogs, galeraErr = os.MkdirTemp("", "topology-galera-logs-")
		if galeraErr != nil {
			return
		}
		start := time.Now()
		galeraCluster, galeraErr = privatedb.StartGalera(context.Background(), galeraLogs, galeraNodes)
		if galeraErr == nil {
			t.Logf("Galera: %d nodes Synced in %v", galeraNodes, time.Since(start).Round(time.Millisecond))
		}
	})
	if galeraErr != nil {
		t.Fatalf("Galera cluster: %v", galeraErr)
	}
	return galeraCluster
}

func TestMain(m *testing.M) {
	code := m.Run()
	if galeraCluster != nil {
		if err := galeraCluster.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "stop the Galera cluster: %v\n", err)
			code = 1
		}
		if code != 0 {
			fmt.Fprintf(os.Stderr, "Galera nodes' error logs: %s\n", galeraLogs)
		} else {
			_ = os.RemoveAll(galeraLogs)
		}
	}
	os.Exit(code)
}
