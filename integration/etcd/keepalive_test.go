package etcd_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// With keep-alive a task runs several times its LockAtMostFor on etcd: each
// extension moves the key to a new lease; no other pod gets the lock
// meanwhile, the task's context stays alive, and the lock is free once the
// task returns.
func TestKeepAliveOnEtcd(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	ex := shedlock.NewExecutor(newProvider(t, newClient(t, c), env, "runner"), shedlock.WithKeepAlive(),
		shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	other := newProvider(t, newClient(t, c), env, "other")
	cfg := shedlock.LockConfig{Name: "long", LockAtMostFor: 3 * time.Second}
	const runFor = 3 * 3 * time.Second
	ran, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		start := time.Now()
		for time.Since(start) < runFor {
			if l, err := other.TryLock(context.Background(), cfg); err == nil {
				_ = l.Unlock(context.Background())
				t.Errorf("another pod took the lock %v into the run", time.Since(start))
			} else if !errors.Is(err, shedlock.ErrNotAcquired) {
				t.Errorf("TryLock: %v", err)
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(50 * time.Millisecond): // a poll interval
			}
		}
		return nil
	})
	if !ran || err != nil {
		t.Fatalf("Run: ran %v, %v", ran, err)
	}
	l := mustLock(t, other, cfg) // released when the task returned
	_ = l.Unlock(context.Background())
}
