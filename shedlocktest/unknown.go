package shedlocktest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// NewFaultyProviderFunc returns a new provider instance on the store under
// test, as NewProviderFunc does, whose writes to the store go through f.
type NewFaultyProviderFunc func(t *testing.T, f *Faults) shedlock.LockProvider

// FaultyStoreFunc prepares an empty lock store for one test (a table no other
// test uses) and returns how to make providers on it whose writes go through
// a Faults.
type FaultyStoreFunc func(t *testing.T) NewFaultyProviderFunc

// RunUnknownOutcomes runs, as parallel subtests of t, the cases where the
// store applies a TryLock, an Extend or an Unlock but the caller cannot tell:
// its answer is lost (AnswerLost), comes after the caller's deadline
// (AnswerLate), or the write is sent twice (Replayed). In each, the holder's
// identity survives the write, a retry converges, and no second holder ever
// appears:
//
//   - TryLock: an error, or a lock the provider holds alone; the same
//     provider's retry takes the lock within LockAtMostFor, and then no other
//     provider can take it.
//   - Extend: never ErrLockLost, and the lock stays held; no other provider
//     takes it past its old end, since the store extended it; the next
//     Extend succeeds, and the next Unlock, after it or at once, frees the
//     lock.
//   - Unlock: the lock is free once LockAtLeastFor has passed; a retried
//     Unlock returns nil or ErrLockLost, and once another provider holds the
//     lock, ErrLockLost, leaving that provider's lock held.
//
// Every provider gets a Faults of its own; the store's adapter passes each of
// its writes through Faults.Do. A case fails when its fault struck no write.
func RunUnknownOutcomes(t *testing.T, newStore FaultyStoreFunc) {
	cases := []struct {
		name string
		fn   func(t *testing.T, newProvider NewFaultyProviderFunc, fault Fault)
	}{
		{"TryLock", testUnknownTryLock},
		{"Extend", func(t *testing.T, np NewFaultyProviderFunc, f Fault) { testUnknownExtend(t, np, f, true) }},
		{"ExtendThenUnlock", func(t *testing.T, np NewFaultyProviderFunc, f Fault) { testUnknownExtend(t, np, f, false) }},
		{"Unlock", testUnknownUnlock},
		{"UnlockKeepsLockAtLeastFor", testUnknownUnlockLeast},
	}
	for _, tc := range cases {
		for _, fault := range []Fault{AnswerLost, AnswerLate, Replayed} {
			t.Run(tc.name+"/"+fault.String(), func(t *testing.T) {
				t.Parallel()
				tc.fn(t, newStore(t), fault)
			})
		}
	}
}

// pod is a provider and the faults of its writes.
type pod struct {
	shedlock.LockProvider
	f *Faults
}

// newPod returns a provider that has taken, extended and released a lock of
// its own, so that what it does only on first use (checks of the store,
// statements prepared, scripts loaded) is done before a fault is armed.
func newPod(t *testing.T, newProvider NewFaultyProviderFunc) pod {
	t.Helper()
	p := pod{f: new(Faults)}
	p.LockProvider = newProvider(t, p.f)
	ctx := context.Background()
	l := mustLock(t, p, cfg("warm-up", time.Minute, 0))
	if err := l.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("warm-up Extend: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("warm-up Unlock: %v", err)
	}
	return p
}

// strike runs op with fault armed on p, under a context that ends after late
// for AnswerLate, and reports whether the fault struck, with op's error. It
// fails t when the fault struck no write: the adapter passes none of op's
// writes through Faults.Do. Only under AnswerLate may the provider's own work
// before its write have outlasted the deadline: then struck is false, and the
// result tells nothing.
func strike(t *testing.T, p pod, fault Fault, late time.Duration, op func(ctx context.Context) error) (struck bool, err error) {
	t.Helper()
	ctx, cancel := context.Background(), context.CancelFunc(func() {})
	if fault == AnswerLate {
		ctx, cancel = context.WithTimeout(ctx, late)
	}
	defer cancel()
	fired := p.f.Fired()
	p.f.Arm(fault)
	err = op(ctx)
	if p.f.Fired() == fired+1 {
		return true, err
	}
	p.f.Disarm()
	if fault == AnswerLate && ctx.Err() != nil {
		t.Logf("the write was not sent within %v; trying again", late)
		return false, err
	}
	t.Fatalf("%v struck no write (the call returned %v): the store's adapter must pass every write through Faults.Do", fault, err)
	return false, err
}

func testUnknownTryLock(t *testing.T, newProvider NewFaultyProviderFunc, fault Fault) {
	a, b := newPod(t, newProvider), newPod(t, newProvider)
	ctx := context.Background()
	widening(t, 300*time.Millisecond, func(name string, most time.Duration) bool {
		c := cfg(name, most, 0)
		var l shedlock.Lock
		ok, err := strike(t, a, fault, most/3, func(ctx context.Context) error {
			var err error
			l, err = a.TryLock(ctx, c)
			return err
		})
		if !ok {
			return false
		}
		switch {
		case err == nil && l == nil:
			t.Fatalf("TryLock under %v: no lock and no error", fault)
		case err == nil:
			// The provider found out its answer: the lock is its alone.
			mustNotLock(t, b, c)
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock of the lock TryLock returned under %v: %v", fault, err)
			}
		case errors.Is(err, shedlock.ErrInvalidConfig):
			t.Fatalf("TryLock under %v: %v", fault, err)
		default:
			t.Logf("TryLock under %v: %v", fault, err)
		}
		// The same provider tries again: it takes the lock once the acquisition
		// it did not hear of has run out, and then holds it alone.
		again := lockWithin(t, a, cfg(name, time.Minute, 0), most+10*time.Second)
		mustNotLock(t, b, c)
		if err := again.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the retried TryLock's lock: %v", err)
		}
		mustLock(t, b, c)
		return true
	})
}

// testUnknownExtend: an Extend under fault, then, if again, another Extend,
// then Unlock.
func testUnknownExtend(t *testing.T, newProvider NewFaultyProviderFunc, fault Fault, again bool) {
	a, b := newPod(t, newProvider), newPod(t, newProvider)
	ctx := context.Background()
	widening(t, 400*time.Millisecond, func(name string, most time.Duration) bool {
		c := cfg(name, most, 0)
		start := time.Now()
		l := mustLock(t, a, c)
		ok, err := strike(t, a, fault, most/4, func(ctx context.Context) error {
			return l.Extend(ctx, time.Minute, 0)
		})
		if !ok || time.Since(start) >= most {
			return false // the Extend may have come after the lock ran out
		}
		switch {
		case fault == Replayed && err != nil:
			t.Fatalf("Extend sent twice: want the second answer, nil, got %v", err)
		case errors.Is(err, shedlock.ErrLockLost) || errors.Is(err, shedlock.ErrInvalidConfig):
			t.Fatalf("Extend under %v of a lock held and unexpired: %v", fault, err)
		}
		// held checks the holder's own view: never lost, and held while the
		// lock is due to be, by the last end the holder heard of (since).
		held := func(when string, since time.Time) {
			t.Helper()
			hc, ok := l.(shedlock.HoldChecker)
			if !ok {
				return
			}
			err := hc.CheckHeld()
			if errors.Is(err, shedlock.ErrLockLost) || (err != nil && time.Since(since) < most/2) {
				t.Fatalf("CheckHeld %s, %v after the lock was taken for %v: %v", when, time.Since(start), most, err)
			}
		}
		held(fmt.Sprintf("after an Extend under %v", fault), start)
		// The store extended the lock: past its old end, it is still held.
		for time.Since(start) < most+most/2 {
			if tryLock(t, b, c) {
				t.Fatalf("another provider took the lock %v after it was taken for %v, though an Extend by a minute was applied under %v",
					time.Since(start), most, fault)
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
		if again {
			extended := time.Now()
			if err := l.Extend(ctx, time.Minute, 0); err != nil {
				t.Fatalf("the next Extend, after one under %v: %v", fault, err)
			}
			held("after the next Extend", extended)
			mustNotLock(t, b, c)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock after an Extend under %v: %v", fault, err)
		}
		mustLock(t, b, c)
		return true
	})
}

func testUnknownUnlock(t *testing.T, newProvider NewFaultyProviderFunc, fault Fault) {
	a, b, c3 := newPod(t, newProvider), newPod(t, newProvider), newPod(t, newProvider)
	widening(t, 300*time.Millisecond, func(name string, window time.Duration) bool {
		c := cfg(name, time.Minute, 0)
		l := mustLock(t, a, c)
		ok, err := strike(t, a, fault, window, func(ctx context.Context) error { return l.Unlock(ctx) })
		if !ok {
			return false
		}
		t.Logf("Unlock under %v: %v", fault, err)
		retriedUnlock(t, l, fault, err)
		// The release was applied: the lock is free at once.
		mustLock(t, b, c)
		otherHolds(t, l, a, c3, c)
		return true
	})
}

func testUnknownUnlockLeast(t *testing.T, newProvider NewFaultyProviderFunc, fault Fault) {
	a, b, c3 := newPod(t, newProvider), newPod(t, newProvider), newPod(t, newProvider)
	widening(t, 400*time.Millisecond, func(name string, least time.Duration) bool {
		c := cfg(name, time.Minute, least)
		start := time.Now()
		l := mustLock(t, a, c)
		ok, err := strike(t, a, fault, least/4, func(ctx context.Context) error { return l.Unlock(ctx) })
		if !ok {
			return false
		}
		retriedUnlock(t, l, fault, err)
		if tryLock(t, b, c) {
			if got := time.Since(start); got < least {
				t.Fatalf("lock released under %v taken again within %v, before LockAtLeastFor %v", fault, got, least)
			}
			return false
		}
		lockWithin(t, b, c, least+10*time.Second)
		if got := time.Since(start); got < least-slack {
			t.Fatalf("lock released under %v taken again after %v, before LockAtLeastFor %v", fault, got, least)
		}
		otherHolds(t, l, a, c3, c)
		return true
	})
}

// retriedUnlock retries the Unlock of l that returned err under fault: it
// finds the lock released, by itself or by the Unlock before.
func retriedUnlock(t *testing.T, l shedlock.Lock, fault Fault, err error) {
	t.Helper()
	again := l.Unlock(context.Background())
	if again != nil && !errors.Is(again, shedlock.ErrLockLost) {
		t.Fatalf("Unlock retried after one under %v that returned %v: want nil or ErrLockLost, got %v", fault, err, again)
	}
}

// otherHolds checks, once another provider holds the lock of c, that the late
// Unlock of the earlier lock l leaves that lock held.
func otherHolds(t *testing.T, l shedlock.Lock, a, c3 pod, c shedlock.LockConfig) {
	t.Helper()
	if err := l.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Unlock of an earlier lock, once another provider holds it: want ErrLockLost, got %v", err)
	}
	mustNotLock(t, c3, c)
	mustNotLock(t, a, c)
}
