package shedlock_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// spinPast stands for a process paused past ctx's deadline (a long GC pause,
// a stopped VM): it keeps the only processor busy until the deadline has
// passed, so that the timer that ends the context has had no chance to fire,
// as after a process resumes. The caller has set GOMAXPROCS to 1.
func spinPast(t *testing.T, ctx context.Context) {
	t.Helper()
	for { // the deadline is read again each time: a renewal may move it
		d, ok := ctx.Deadline()
		if !ok {
			t.Fatal("the context has no deadline")
		}
		if !time.Now().Before(d) {
			return
		}
	}
}

// oneProcessor runs the rest of the test on one processor, as a process just
// resumed runs its first goroutine before its timers.
func oneProcessor(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// A task resumed past its lock's deadline must not be told it still holds
// the lock: AssertLocked is the check "at the top of code that must never
// run unlocked", and CheckHeld reports a lock past its LockAtMostFor.
func TestAssertLockedFailsInATaskResumedPastItsDeadline(t *testing.T) {
	oneProcessor(t)
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	defer func() { _ = ex.Stop(context.Background()) }()
	var asserted error
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "paused-task", LockAtMostFor: 100 * time.Millisecond},
		func(ctx context.Context) error {
			spinPast(t, ctx)
			asserted = shedlock.AssertLocked(ctx)
			return nil
		})
	if !ran || err != nil {
		t.Fatalf("Run: ran %v, err %v", ran, err)
	}
	if !errors.Is(asserted, shedlock.ErrNotLocked) {
		t.Fatalf("AssertLocked past the lock's deadline: %v, want ErrNotLocked", asserted)
	}
}

// The same of a Leader's context: "AssertLocked passes while it lasts", and
// the leadership's context ends before the lease could end in the store. A
// leader resumed past that must not pass AssertLocked on the term's context.
func TestAssertLockedFailsOnALeaderContextResumedPastItsDeadline(t *testing.T) {
	a := newLeader(t, noRenewals{shedlocktest.NewMemoryStore().Provider("a")}, 100*time.Millisecond)
	a.Start()
	waitLeading(t, 5*time.Second, a)
	ctx, leading := a.Context()
	if !leading {
		t.Fatal("not leading")
	}
	oneProcessor(t)
	spinPast(t, ctx)
	if err := shedlock.AssertLocked(ctx); !errors.Is(err, shedlock.ErrNotLocked) {
		t.Fatalf("AssertLocked on a leadership context past its deadline: %v, want ErrNotLocked", err)
	}
}

// noRenewals is a store that takes locks but whose Extends never get through:
// the term's deadline stays where its TryLock put it.
type noRenewals struct{ shedlock.LockProvider }

func (p noRenewals) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return unrenewable{l}, nil
}

type unrenewable struct{ shedlock.Lock }

func (unrenewable) Extend(context.Context, time.Duration, time.Duration) error {
	return errors.New("store unreachable")
}
