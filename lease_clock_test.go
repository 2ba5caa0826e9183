package shedlock

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// expiryMargin is how late past its deadline a task's context may end on a
// busy machine; far below the long lease's minute, which a clock that waited
// for the wrong deadline would show.
const expiryMargin = 3 * time.Second

// ended is what a run's task saw: when its context ended (from Run's call),
// and with what cause.
type ended struct {
	after time.Duration
	cause error
}

// runUntilDone starts a run whose task waits for its context to end, or for
// stop; the run's outcome comes on the channel.
func runUntilDone(t *testing.T, ex *Executor, cfg LockConfig, stop <-chan struct{},
	task func(ctx context.Context)) <-chan ended {
	t.Helper()
	out := make(chan ended, 1)
	go func() {
		start := time.Now()
		ran, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			if task != nil {
				task(ctx)
			}
			select {
			case <-ctx.Done():
				out <- ended{time.Since(start), context.Cause(ctx)}
			case <-stop:
				out <- ended{cause: errors.New("stopped by the test")}
			}
			return nil
		})
		if !ran || err != nil {
			out <- ended{cause: errors.Join(errors.New("did not run"), err)}
		}
	}()
	return out
}

// expiresAt checks that a run's context ended with ErrLockExpired at its own
// deadline (lockEnd of its LockAtMostFor), not before and not much after.
func expiresAt(t *testing.T, name string, got <-chan ended, mostFor time.Duration) {
	t.Helper()
	want := lockEnd(time.Time{}, mostFor).Sub(time.Time{})
	select {
	case e := <-got:
		if !errors.Is(e.cause, ErrLockExpired) {
			t.Fatalf("%s: context ended with %v, want ErrLockExpired", name, e.cause)
		}
		if e.after < want || e.after > want+expiryMargin {
			t.Errorf("%s: context ended %v after Run began, want its deadline %v (+ at most %v)", name, e.after, want, expiryMargin)
		}
	case <-time.After(want + expiryMargin):
		t.Fatalf("%s: context still running %v after Run began: its deadline %v was missed", name, want+expiryMargin, want)
	}
}

// One timer serves every lease of an executor: a lease whose deadline comes
// before the one the timer waits for must re-arm it, a fired timer must re-arm
// for the leases left, and an Extend that brings a deadline forward must too.
// Each run's context ends at its own deadline, while a long lease beside them
// keeps running.
func TestLeaseClockEndsEachLeaseAtItsOwnDeadline(t *testing.T) {
	ex := NewExecutor(&scriptedProvider{answers: map[string]error{}},
		WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	stop := make(chan struct{})
	t.Cleanup(func() {
		close(stop)
		_ = ex.Stop(context.Background())
	})

	long := runUntilDone(t, ex, LockConfig{Name: "long", LockAtMostFor: time.Minute}, stop, nil)

	// Earlier than the long lease's deadline, which the timer waits for.
	early := runUntilDone(t, ex, LockConfig{Name: "early", LockAtMostFor: 300 * time.Millisecond}, stop, nil)
	expiresAt(t, "early", early, 300*time.Millisecond)

	// Two leases at once: the timer fires for the first and must re-arm for
	// the second, not for the long one.
	first := runUntilDone(t, ex, LockConfig{Name: "first", LockAtMostFor: 200 * time.Millisecond}, stop, nil)
	second := runUntilDone(t, ex, LockConfig{Name: "second", LockAtMostFor: 700 * time.Millisecond}, stop, nil)
	expiresAt(t, "first", first, 200*time.Millisecond)
	expiresAt(t, "second", second, 700*time.Millisecond)

	// An Extend to a shorter LockAtMostFor brings the deadline forward.
	shortened := runUntilDone(t, ex, LockConfig{Name: "shortened", LockAtMostFor: time.Minute}, stop,
		func(ctx context.Context) {
			l, ok := LockFromContext(ctx)
			if !ok {
				t.Error("no lock in the task's context")
				return
			}
			if err := l.Extend(ctx, 400*time.Millisecond, 0); err != nil {
				t.Errorf("extend: %v", err)
			}
		})
	expiresAt(t, "shortened", shortened, 400*time.Millisecond)

	select {
	case e := <-long:
		t.Fatalf("the long lease ended after %v with %v, before its deadline", e.after, e.cause)
	default:
	}
}
