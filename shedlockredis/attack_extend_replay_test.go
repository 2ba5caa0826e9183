package shedlockredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// An Extend that shortens LockAtMostFor, sent twice (as go-redis does when a
// connection drops after the server ran the script), answers with the time
// to live the first send set. Unlock must still keep the lock until
// LockAtLeastFor after it was taken: no second provider may take it at once.
func TestAttackExtendReplayedShorterKeepsLockAtLeastFor(t *testing.T) {
	env := newEnv(t)
	f := new(shedlocktest.Faults)
	c := newClient(t)
	c.AddHook(faultHook{f})
	a := newProvider(t, c, shedlockredis.WithEnv(env))
	b := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	ctx := context.Background()

	// Warm up: the scripts are loaded before a fault is armed.
	w, err := a.TryLock(ctx, shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 20 * time.Second}
	start := time.Now()
	l, err := a.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.Arm(shedlocktest.Replayed)
	if err := l.Extend(ctx, 20*time.Second, 20*time.Second); err != nil {
		t.Fatalf("Extend sent twice: %v", err)
	}
	if f.Fired() != 1 {
		t.Fatal("the fault struck no write")
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if got, err := b.TryLock(ctx, cfg); err == nil {
		defer got.Unlock(ctx)
		t.Fatalf("another provider took the lock %v after it was taken with LockAtLeastFor %v",
			time.Since(start).Round(time.Millisecond), cfg.LockAtLeastFor)
	}
}
