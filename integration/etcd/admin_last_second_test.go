package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// shedlock.LockInfo.Held: "no instance can take the lock until then". In the
// last second of a lease, etcd reports its time to live as 0 whole seconds:
// Inspect must not show as free a lock that no instance can take.
func TestInspectLastSecondOfLeaseShowsHeld(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	a := newProvider(t, newClient(t, c), env, "holder")
	b := newProvider(t, newClient(t, c), env, "other")
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second}
	mustLock(t, a, cfg)
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		info, err := a.Inspect(ctx, cfg.Name)
		if errors.Is(err, shedlock.ErrLockNotFound) {
			return // the key went: the lock is free
		}
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if !info.Held {
			l, err := b.TryLock(ctx, cfg)
			if err == nil {
				_ = l.Unlock(ctx)
				return
			}
			if errors.Is(err, shedlock.ErrNotAcquired) {
				t.Fatalf("Inspect shows the lock free (Held %v, TimeLeft %v, LockUntil %v), yet TryLock finds it held",
					info.Held, info.TimeLeft, info.LockUntil)
			}
			t.Fatalf("TryLock: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	t.Fatal("the lock was not free within 10s")
}
