package etcdcluster

import (
	"context"
	"os"
	"testing"
	"time"
)

// New starts a cluster of n members for t, stopped when t ends (their logs in
// its data directory), with the members' data in a directory of /dev/shm (a
// tmpfs, where a sync costs no disk write) when there is one: the disk's fsync
// latency, shared with every other process of a busy machine, stalled the
// cluster's heartbeats and lease expiry past the tests' bounds, and a member
// SIGKILLed by a test keeps its data there all the same. Without an etcd
// binary it skips t, naming the store for SHEDLOCK_SKIP_STORES=etcd, or fails
// it under CI=true.
func New(t testing.TB, n int) *Cluster {
	t.Helper()
	dir := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err = os.MkdirTemp("/dev/shm", "shedlock-etcd-"); err != nil {
			t.Fatalf("etcd cluster: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) }) // after the members stop: cleanups run last first
	}
	return start(t, n, dir)
}

func start(t testing.TB, n int, dir string) *Cluster {
	t.Helper()
	if _, err := Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no etcd for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no etcd for tests (leave it out with SHEDLOCK_SKIP_STORES=etcd): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if dir == "" {
		dir = t.TempDir()
	}
	c, err := Start(ctx, dir, n)
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
