// Package etcd_test runs shedlocketcd against private three-member etcd
// clusters (internal/testkit/etcdcluster): the conformance suite, Java
// ShedLock's EtcdLockProvider sharing the keys, fencing, Admin, the Leader,
// and members killed under load.
package etcd_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// shared is the cluster most tests use: members are killed only on clusters
// of their own.
var shared struct {
	once sync.Once
	dir  string
	c    *etcdcluster.Cluster
	err  error
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(workerEnv); spec != "" {
		os.Exit(chaosWorker(spec))
	}
	code := m.Run()
	if shared.c != nil {
		_ = shared.c.Close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedCluster returns the shared cluster, started at first use. Without an
// etcd binary it skips t, or fails it under CI=true.
func sharedCluster(t testing.TB) *etcdcluster.Cluster {
	t.Helper()
	if _, err := etcdcluster.Find(); err != nil {
		etcdcluster.New(t, 3) // skips or fails with the reason
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "shedlock-etcd-")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.c, shared.err = etcdcluster.Start(ctx, shared.dir, 3)
	})
	if shared.err != nil {
		t.Fatalf("etcd cluster: %v", shared.err)
	}
	return shared.c
}

// newClient returns a client of its own on c, as a separate pod would have,
// closed when t ends.
func newClient(t testing.TB, c *etcdcluster.Cluster) *clientv3.Client {
	t.Helper()
	return newClientOn(t, c.Endpoints()...)
}

func newClientOn(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// newEnv returns an env no other test uses, so that tests share a cluster
// without meeting.
func newEnv() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test-" + hex.EncodeToString(b[:])
}

func newProvider(t testing.TB, cli *clientv3.Client, env, owner string) *shedlocketcd.Provider {
	t.Helper()
	p, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv(env), shedlocketcd.WithLockedBy(owner))
	if err != nil {
		t.Fatalf("NewProvider: %v", err)
	}
	return p
}

// newStore is the conformance suite's store: an env of its own on the shared
// cluster, a client of its own per provider.
func newStore(t *testing.T) shedlocktest.NewProviderFunc {
	c := sharedCluster(t)
	env := newEnv()
	n := 0
	var mu sync.Mutex
	return func(t *testing.T) shedlock.LockProvider {
		mu.Lock()
		n++
		owner := fmt.Sprintf("pod-%d", n)
		mu.Unlock()
		return newProvider(t, newClient(t, c), env, owner)
	}
}

func TestConformance(t *testing.T) {
	shedlocktest.Run(t, newStore)
}

func TestContention(t *testing.T) {
	shedlocktest.RunContention(t, newStore, shedlocktest.Contention{})
}

func mustLock(t testing.TB, p shedlock.LockProvider, cfg shedlock.LockConfig) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	if err != nil {
		t.Fatalf("TryLock(%q): %v", cfg.Name, err)
	}
	return l
}

func mustNotLock(t testing.TB, p shedlock.LockProvider, cfg shedlock.LockConfig) {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	if err == nil {
		_ = l.Unlock(context.Background())
		t.Fatalf("TryLock(%q): taken, want ErrNotAcquired", cfg.Name)
	}
	if !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock(%q): %v, want ErrNotAcquired", cfg.Name, err)
	}
}

// lockWithin polls TryLock until it takes the lock, and returns when it did.
func lockWithin(t testing.TB, p shedlock.LockProvider, cfg shedlock.LockConfig, timeout time.Duration) (shedlock.Lock, time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := p.TryLock(context.Background(), cfg)
		if err == nil {
			return l, time.Now()
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatalf("TryLock(%q): %v", cfg.Name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryLock(%q): not acquired within %v", cfg.Name, timeout)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
