package etcdcluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// New starts a cluster of n members for t, stopped when t ends (their logs in
// t's temporary directory). Without an etcd binary it skips t, naming the
// store for SHEDLOCK_SKIP_STORES=etcd, or fails it under CI=true.
func New(t testing.TB, n int) *Cluster {
	t.Helper()
	if _, err := Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no etcd for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no etcd for tests (leave it out with SHEDLOCK_SKIP_STORES=etcd): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, t.TempDir(), n)
	if err != nil {
		t.Fatalf("etcd cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("etcd cluster: %v", err)
		}
	})
	return c
}
