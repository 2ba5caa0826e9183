package faults_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// A connection reset while the acquiring UPDATE is on the wire: the task must not
// run, the error must be returned and logged. If the server ran the UPDATE and
// only the answer was lost, the lock is held in the table by an owner that does
// not know it: it must stay held until its lock_until, and then be free.
func TestResetDuringAcquire(t *testing.T) {
	for _, tc := range []struct {
		name    string
		forward bool // the server ran the statement; the response was lost
	}{
		{"RequestLost", false},
		{"ResponseLost", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a, b := r.pod(), r.pod()
			ex := r.executor(a)
			const most = 2 * time.Second
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
			g := r.guard(cfg.Name, a.provider.LockedBy())
			ctx := context.Background()

			// Warm up: the row exists and the statements are prepared, so the next
			// request on the wire is the acquiring UPDATE.
			if ran, err := ex.Run(ctx, cfg, g.task(nil)); !ran || err != nil {
				t.Fatalf("warm-up run: ran=%v err=%v", ran, err)
			}
			fired := a.proxy.ResetOnNextRequest(tc.forward)
			start := time.Now()
			ran, err := ex.Run(ctx, cfg, g.task(nil))
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				t.Fatal("the fault did not fire during the acquire")
			}
			if ran || err == nil {
				t.Fatalf("acquire over a reset connection: want (false, error), got ran=%v err=%v", ran, err)
			}
			if got := g.runs.Load(); got != 1 {
				t.Fatalf("task ran %d times, want only the warm-up", got)
			}
			if r.log.count(slog.LevelError, "could not take lock") != 1 {
				t.Errorf("the acquire error was not logged at error level")
			}

			owner, left := r.holder(cfg.Name)
			if tc.forward {
				// The lock is taken but its owner never learned it: it stays until lock_until.
				if owner != a.provider.LockedBy() {
					t.Fatalf("after a lost response: holder %q, want %q (the UPDATE ran)", owner, a.provider.LockedBy())
				}
				if _, err := b.provider.TryLock(ctx, cfg); !errors.Is(err, shedlock.ErrNotAcquired) {
					t.Fatalf("another pod before lock_until: want ErrNotAcquired, got %v", err)
				}
				// Free once lock_until passes, by the database clock: the poll's slack only.
				l, waited := lockWithin(t, b.provider, cfg, most+1500*time.Millisecond)
				if took := time.Since(start); took < most-100*time.Millisecond {
					t.Errorf("orphaned lock taken %v after the acquire, before LockAtMostFor %v", took, most)
				}
				t.Logf("orphaned lock (left %v) taken by another pod after %v", left, waited)
				if err := l.Unlock(ctx); err != nil {
					t.Fatal(err)
				}
			} else if owner != "" {
				t.Fatalf("after a lost request: holder %q (left %v), want none", owner, left)
			}

			// The same executor and pool run again once the connection is gone: no restart.
			waitFor(t, most+5*time.Second, "runs resume on the same executor", func() bool {
				ran, err := ex.Run(ctx, cfg, g.task(nil))
				if err != nil {
					t.Logf("run after the fault: %v", err)
				}
				return ran && err == nil
			})
			g.verify(t)
		})
	}
}
