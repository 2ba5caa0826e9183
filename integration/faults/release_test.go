package faults_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// A release that fails on every try: the error is returned and logged, the lock
// stays held until its lock_until and is then free; a late release, once the
// database is back, reports the lock lost and does not free the new owner's lock.
func TestReleaseFails(t *testing.T) {
	r := newRig(t)
	a, b := r.pod(), r.pod()
	ex := r.executor(a)
	const most = 2 * time.Second
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
	g := r.guard(cfg.Name, a.provider.LockedBy())
	ctx := context.Background()

	start := time.Now()
	ran, err := ex.Run(ctx, cfg, g.task(func(context.Context) { a.proxy.SetDown(true) }))
	if !ran || !errors.Is(err, shedlock.ErrReleaseFailed) {
		t.Fatalf("run whose release cannot reach the database: want (true, ErrReleaseFailed), got ran=%v err=%v", ran, err)
	}
	if r.log.count(slog.LevelError, "release failed") != 1 || r.log.count(slog.LevelWarn, "release failed, retrying") != 2 {
		t.Errorf("want the failed release logged as an error after 2 logged retries")
	}
	if owner, _ := r.holder(cfg.Name); owner != a.provider.LockedBy() {
		t.Fatalf("after a failed release: holder %q, want the old owner %q until lock_until", owner, a.provider.LockedBy())
	}
	if _, err := b.provider.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("another pod before lock_until: want ErrNotAcquired, got %v", err)
	}
	// Free once lock_until passes, by the database clock: the poll's slack only.
	lockWithin(t, b.provider, cfg, most+1500*time.Millisecond)
	if took := time.Since(start); took < most-100*time.Millisecond {
		t.Fatalf("lock taken %v after a failed release, before its lock_until (%v)", took, most)
	}
	a.proxy.SetDown(false)
	g.verify(t)
}

// The same owner's late Unlock, on a lock it took directly, after the lock has
// expired and been taken by another pod: ErrLockLost, and the new owner keeps it.
func TestLateReleaseKeepsNewOwnersLock(t *testing.T) {
	r := newRig(t)
	a, b, c := r.pod(), r.pod(), r.pod()
	const most = time.Second
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
	ctx := context.Background()
	l, err := a.provider.TryLock(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.proxy.SetDown(true)
	if err := l.Unlock(ctx); !errors.Is(err, shedlock.ErrReleaseFailed) {
		t.Fatalf("Unlock with the database unreachable: want ErrReleaseFailed, got %v", err)
	}
	lockWithin(t, b.provider, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, most+5*time.Second)
	a.proxy.SetDown(false)
	if err := l.Unlock(ctx); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("late Unlock after another pod took the lock: want ErrLockLost, got %v", err)
	}
	if owner, _ := r.holder(cfg.Name); owner != b.provider.LockedBy() {
		t.Fatalf("after the late Unlock: holder %q, want the new owner %q", owner, b.provider.LockedBy())
	}
	if _, err := c.provider.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("a third pod after the late Unlock: want ErrNotAcquired, got %v", err)
	}
}

// The release's request or its response lost once: the retry goes through a new
// connection and frees the lock. A lost response is always the executor's to
// retry: the statement ran, and only the executor knows it may run it again. A
// lost request may be retried below it: when the driver finds the connection
// reset before it has written the statement (on a busy machine the reset can
// come first), database/sql sends it on another connection by itself.
func TestReleaseRetried(t *testing.T) {
	for _, tc := range []struct {
		name    string
		forward bool
	}{{"RequestLost", false}, {"ResponseLost", true}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a, b := r.pod(), r.pod()
			ex := r.executor(a)
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
			g := r.guard(cfg.Name, a.provider.LockedBy())
			var fired <-chan struct{}
			ran, err := ex.Run(context.Background(), cfg, g.task(func(context.Context) {
				fired = a.proxy.ResetOnNextRequest(tc.forward)
			}))
			if !ran || err != nil {
				t.Fatalf("run: want (true, nil) after a retried release, got ran=%v err=%v", ran, err)
			}
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				t.Fatal("the fault did not fire during the release")
			}
			retried := r.log.count(slog.LevelWarn, "release failed, retrying")
			if retried > 1 || (tc.forward && retried != 1) {
				t.Errorf("release retries logged: %d, want 1 (0 also for a lost request, retried by database/sql)", retried)
			}
			if _, err := b.provider.TryLock(context.Background(), cfg); err != nil {
				t.Fatalf("after a retried release: want the lock free, got %v", err)
			}
			g.verify(t)
		})
	}
}
