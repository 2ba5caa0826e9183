package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// The contract of shedlock.FireLocker, what CatchUp needs: a fire time that
// succeeded is never taken again, whichever pod asks.
func TestCatchUp(t *testing.T) {
	shedlocktest.RunCatchUp(t, newStore)
}

// The fired key outlives the lock: no lease, and not listed among the locks.
func TestFiredKeyHasNoLeaseAndIsNoLock(t *testing.T) {
	ctx := context.Background()
	c := sharedCluster(t)
	cli := newClient(t, c)
	p := newProvider(t, cli, newEnv(), "pod-1")
	cfg := shedlock.LockConfig{Name: "nightly", LockAtMostFor: time.Minute}
	fire := time.Now().Truncate(time.Second).Add(-time.Hour)
	l, err := p.TryLockFire(ctx, cfg, fire)
	if err != nil {
		t.Fatalf("TryLockFire: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); err != nil {
		t.Fatalf("UnlockSucceeded: %v", err)
	}
	resp, err := cli.Get(ctx, p.FiredKey(cfg.Name))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get(%s): %v, %v; want the key", p.FiredKey(cfg.Name), resp, err)
	}
	if kv := resp.Kvs[0]; kv.Lease != 0 || len(kv.Value) != 19 || !strings.HasPrefix(string(kv.Key), "shedlock-fired:") {
		t.Fatalf("fired key %s = %q on lease %d; want 19 digits on no lease", kv.Key, kv.Value, kv.Lease)
	}
	locks, err := p.Locks(ctx)
	if err != nil || len(locks) != 0 {
		t.Fatalf("Locks after the release: %v, %v; want none (the fired key is no lock)", locks, err)
	}
}

// A record later than the lock's fire time, put while the lock was held, is
// kept: UnlockSucceeded never moves the record back.
func TestUnlockSucceededKeepsLaterRecord(t *testing.T) {
	ctx := context.Background()
	c := sharedCluster(t)
	cli := newClient(t, c)
	p := newProvider(t, cli, newEnv(), "pod-1")
	cfg := shedlock.LockConfig{Name: "nightly", LockAtMostFor: time.Minute}
	fire := time.Now().Truncate(time.Second).Add(-time.Hour)
	l, err := p.TryLockFire(ctx, cfg, fire)
	if err != nil {
		t.Fatalf("TryLockFire: %v", err)
	}
	later := fire.Add(time.Minute)
	if _, err := cli.Put(ctx, p.FiredKey(cfg.Name), fmt.Sprintf("%019d", later.UnixMilli())); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); err != nil {
		t.Fatalf("UnlockSucceeded: %v", err)
	}
	if last, ok, err := p.LastFire(ctx, cfg.Name); err != nil || !ok || !last.Equal(later) {
		t.Fatalf("LastFire = %v, %v, %v; want the later %v", last, ok, err, later)
	}
}

// A lock lost before its release records nothing: the fire time may run again.
func TestLostFireLockRecordsNothing(t *testing.T) {
	ctx := context.Background()
	c := sharedCluster(t)
	p := newProvider(t, newClient(t, c), newEnv(), "pod-1")
	cfg := shedlock.LockConfig{Name: "nightly", LockAtMostFor: time.Minute}
	fire := time.Now().Truncate(time.Second).Add(-time.Hour)
	l, err := p.TryLockFire(ctx, cfg, fire)
	if err != nil {
		t.Fatalf("TryLockFire: %v", err)
	}
	if _, err := p.ForceUnlock(ctx, cfg.Name); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	if err := l.UnlockSucceeded(ctx, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("UnlockSucceeded of a lost lock: %v; want ErrLockLost", err)
	}
	if _, ok, err := p.LastFire(ctx, cfg.Name); err != nil || ok {
		t.Fatalf("LastFire after a lost lock: ok %v, err %v; want none", ok, err)
	}
	l, err = p.TryLockFire(ctx, cfg, fire)
	if err != nil {
		t.Fatalf("TryLockFire again: %v", err)
	}
	_ = l.Unlock(ctx)
}
