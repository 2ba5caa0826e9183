package kubeapiserver

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
)

// New starts a server for t, stopped when t ends, its files and etcd's data
// in a directory of /dev/shm where there is one (a tmpfs: etcd's syncs cost no
// disk write). Without an etcd binary it skips t, naming the store for
// SHEDLOCK_SKIP_STORES=kubernetes, or fails it under CI=true. A build of
// kube-apiserver that fails fails t: no fake stands in for the server.
func New(t testing.TB) *Server {
	t.Helper()
	if _, err := etcdcluster.Find(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no etcd for the kubernetes tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no etcd for the kubernetes tests (leave them out with SHEDLOCK_SKIP_STORES=kubernetes): %v", err)
	}
	dir := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err = os.MkdirTemp("/dev/shm", "shedlock-kube-"); err != nil {
			t.Fatalf("kube-apiserver: %v", err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) }) // after the server stops: cleanups run last first
	} else {
		dir = t.TempDir()
	}
	// The first run may build kube-apiserver: minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	s, err := Start(ctx, dir)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("kube-apiserver: %v", err)
		}
	})
	return s
}
