package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

func TestAdmin(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	ctx := context.Background()
	a := newProvider(t, newClient(t, c), env, "pod-a")
	b := newProvider(t, newClient(t, c), env, "pod-b")
	var admin shedlock.Admin = newProvider(t, newClient(t, c), env, "operator")

	if err := admin.HealthCheck(ctx); err != nil {
		t.Fatalf("HealthCheck: %v", err)
	}
	if err := admin.EnsureTable(ctx); err != nil {
		t.Fatalf("EnsureTable: %v", err)
	}
	if _, err := admin.Inspect(ctx, "job"); !errors.Is(err, shedlock.ErrLockNotFound) {
		t.Fatalf("Inspect of a free lock: %v, want ErrLockNotFound", err)
	}
	la := mustLock(t, a, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	mustLock(t, b, shedlock.LockConfig{Name: "other", LockAtMostFor: 30 * time.Second})
	locks, err := admin.Locks(ctx)
	if err != nil {
		t.Fatalf("Locks: %v", err)
	}
	if len(locks) != 2 || locks[0].Name != "job" || locks[1].Name != "other" {
		t.Fatalf("Locks: %+v", locks)
	}
	seen := locks[0]
	if !seen.Held || seen.TimeLeft < 55*time.Second || seen.TimeLeft > time.Minute {
		t.Fatalf("Locks: job %+v, want held with about a minute left", seen)
	}
	if len(seen.LockedBy) < len("pod-a#") || seen.LockedBy[:6] != "pod-a#" || time.Since(seen.LockedAt) > time.Minute {
		t.Fatalf("Locks: job held by %q since %v", seen.LockedBy, seen.LockedAt)
	}

	// ForceUnlockSeen frees the acquisition shown, also once extended...
	if err := la.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	got, err := admin.ForceUnlockSeen(ctx, seen)
	if err != nil || got.LockedBy != seen.LockedBy {
		t.Fatalf("ForceUnlockSeen: %+v %v", got, err)
	}
	if err := la.Unlock(ctx); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("holder's Unlock after a forced unlock: %v, want ErrLockLost", err)
	}
	// ...and never one taken since.
	mustLock(t, b, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	if _, err := admin.ForceUnlockSeen(ctx, seen); !errors.Is(err, shedlock.ErrLockChanged) {
		t.Fatalf("ForceUnlockSeen of an older acquisition: %v, want ErrLockChanged", err)
	}
	if _, err := admin.Inspect(ctx, "job"); err != nil {
		t.Fatalf("the newer holder's lock is gone: %v", err)
	}
	got, err = admin.ForceUnlock(ctx, "job")
	if err != nil || got.LockedBy[:6] != "pod-b#" {
		t.Fatalf("ForceUnlock: %+v %v", got, err)
	}
	if _, err := admin.ForceUnlock(ctx, "job"); !errors.Is(err, shedlock.ErrLockNotFound) {
		t.Fatalf("ForceUnlock of a free lock: %v, want ErrLockNotFound", err)
	}
}

// The Leader on etcd: one of two instances leads; when it stops, the other
// takes over; the term's fencing token grows.
func TestLeaderOnEtcd(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	a := newProvider(t, newClient(t, c), env, "a")
	b := newProvider(t, newClient(t, c), env, "b")
	la, err := shedlock.NewLeader(a, "leader", 3*time.Second, shedlock.WithLeaderRetryPeriod(100*time.Millisecond), shedlock.WithLeaderRenewPeriod(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := shedlock.NewLeader(b, "leader", 3*time.Second, shedlock.WithLeaderRetryPeriod(100*time.Millisecond), shedlock.WithLeaderRenewPeriod(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	la.Start()
	waitFor(t, 10*time.Second, la.IsLeader)
	lb.Start()
	defer func() { _ = lb.Stop(context.Background()) }()
	// a renews across several renew periods; b never leads meanwhile.
	for range 4 {
		if lb.IsLeader() || !la.IsLeader() {
			t.Fatalf("a leads %v, b leads %v", la.IsLeader(), lb.IsLeader())
		}
		time.Sleep(time.Second) // renew periods pass
	}
	ctxA, _ := la.Context()
	fenceA, _ := shedlock.FenceFromContext(ctxA)
	if err := la.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitFor(t, 10*time.Second, lb.IsLeader)
	ctxB, _ := lb.Context()
	fenceB, ok := shedlock.FenceFromContext(ctxB)
	if !ok || fenceB <= fenceA {
		t.Fatalf("b's term fence %d (ok %v), a's %d: want larger", fenceB, ok, fenceA)
	}
}

func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", timeout)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
}
