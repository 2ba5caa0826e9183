// Package shedlocktest checks that a shedlock.LockProvider keeps the promises the
// rest of shedlock relies on, against a real store. Every provider in this module
// runs it; run it against your own:
//
//	func TestMyProvider(t *testing.T) {
//		shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc {
//			table := createEmptyLockTable(t)
//			return func(t *testing.T) shedlock.LockProvider {
//				return newMyProvider(t, openPool(t), table)
//			}
//		})
//	}
//
// RunUnknownOutcomes checks the writes whose outcome the caller cannot know
// (applied by the store, their answer lost, late, or the write sent twice):
// its providers send their writes through a Faults, which Faults.OpenDB wires
// into any database/sql driver, and a hook or interceptor into other clients.
//
// RunControl checks an operator's pause, resume and run-now
// (shedlock.Controller and shedlock.RunRequester) on a store that offers them.
// The MemoryStore offers them, and is a shedlock.Admin, for tests of code that
// steers jobs or shows them.
package shedlocktest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// NewProviderFunc returns a new provider instance on the store under test. Each
// call must give a distinct instance, as a separate pod would have: its own owner
// and, where the store has them, its own connections.
type NewProviderFunc func(t *testing.T) shedlock.LockProvider

// NewStoreFunc prepares an empty lock store for one test (a table no other test
// uses) and returns how to make providers on it.
type NewStoreFunc func(t *testing.T) NewProviderFunc

// Run runs the behaviour suite as parallel subtests of t. Where the provider
// is a shedlock.BatchLocker, it checks the batch contract too, and that an
// executor's herd of attempts goes in batches.
func Run(t *testing.T, newStore NewStoreFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, newProvider NewProviderFunc)
	}{
		{"AcquireSkipRelease", testAcquireSkipRelease},
		{"IndependentNames", testIndependentNames},
		{"LockAtLeastForKeptAfterRelease", testLockAtLeastFor},
		{"LockAtMostForExpiresUnreleasedLock", testLockAtMostFor},
		{"LateUnlockKeepsNextHoldersLock", testLateUnlockOtherOwner},
		{"LateUnlockKeepsOwnNewerLock", testLateUnlockSameOwner},
		{"ExtendKeepsLock", testExtend},
		{"ExtendAfterExpiryIsLockLost", testExtendExpired},
		{"DoubleUnlockIsLockLost", testDoubleUnlock},
		{"AssertLockedFollowsTheLock", testAssertLocked},
		{"InvalidConfigRejected", testInvalidConfig},
		{"CancelledContextTakesNoLock", testCancelledContext},
		{"FenceIncreases", testFenceIncreases},
		{"Batch", testBatch}, // checks nothing unless the provider is a shedlock.BatchLocker
		{"HerdThroughExecutor", testHerd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func cfg(name string, most, least time.Duration) shedlock.LockConfig {
	return shedlock.LockConfig{Name: name, LockAtMostFor: most, LockAtLeastFor: least}
}

func mustLock(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), c)
	if err != nil {
		t.Fatalf("TryLock(%q): want the lock, got %v", c.Name, err)
	}
	return l
}

func mustNotLock(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig) {
	t.Helper()
	l, err := p.TryLock(context.Background(), c)
	if !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock(%q): want ErrNotAcquired, got lock=%v err=%v", c.Name, l != nil, err)
	}
}

// lockWithin polls TryLock until it succeeds, failing t after timeout.
func lockWithin(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig, timeout time.Duration) shedlock.Lock {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := p.TryLock(context.Background(), c)
		if err == nil {
			return l
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatalf("TryLock(%q): %v", c.Name, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("TryLock(%q): not acquired within %v", c.Name, timeout)
		}
		time.Sleep(2 * time.Millisecond) // poll interval, not synchronisation
	}
}

// slack absorbs the millisecond rounding of stored times.
const slack = 5 * time.Millisecond

// tryLock reports whether p took the lock; any error but ErrNotAcquired fails t.
func tryLock(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig) bool {
	t.Helper()
	l, err := p.TryLock(context.Background(), c)
	if err != nil && !errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock(%q): %v", c.Name, err)
	}
	return l != nil
}

// widening runs check on a fresh name with a window of base, then of 4 and 16
// times base, until check can tell. A call that returns after its window has
// closed proves nothing either way, so on a machine too loaded to answer
// within the window check returns false; a lock taken by a call that returned
// within the window is a broken promise, and check fails t. A busy CI machine
// gets a wider window, never a false failure, and a provider that breaks the
// promise still fails.
func widening(t *testing.T, base time.Duration, check func(name string, window time.Duration) bool) {
	t.Helper()
	window := base
	for i := range 3 {
		if check(fmt.Sprintf("job-%d", i), window) {
			return
		}
		t.Logf("this machine answered too late to tell within %v; trying %v", window, 4*window)
		window *= 4
	}
	t.Fatalf("this machine answered too late to tell within %v, three times", window/4)
}

func testAcquireSkipRelease(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	c := cfg("job", time.Minute, 0)
	l := mustLock(t, a, c)
	mustNotLock(t, b, c)
	mustNotLock(t, a, c) // the holder itself cannot take it twice
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l = mustLock(t, b, c)
	mustNotLock(t, a, c)
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

func testIndependentNames(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	mustLock(t, a, cfg("job-a", time.Minute, 0))
	mustLock(t, b, cfg("job-b", time.Minute, 0))
	mustNotLock(t, b, cfg("job-a", time.Minute, 0))
	mustNotLock(t, a, cfg("job-b", time.Minute, 0))
}

func testLockAtLeastFor(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	widening(t, 400*time.Millisecond, func(name string, least time.Duration) bool {
		c := cfg(name, 30*time.Second, least)
		start := time.Now()
		l := mustLock(t, a, c)
		if err := l.Unlock(context.Background()); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		return takenNoSooner(t, b, c, start, least, "released lock taken again", "LockAtLeastFor")
	})
}

func testLockAtMostFor(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	widening(t, 400*time.Millisecond, func(name string, most time.Duration) bool {
		c := cfg(name, most, 0)
		start := time.Now()
		mustLock(t, a, c) // never unlocked: the holder crashed
		return takenNoSooner(t, b, c, start, most, "unreleased lock taken", "LockAtMostFor")
	})
}

// takenNoSooner has p take c, which was held from start for d (named bound
// in messages), and fails t when p takes it sooner. It returns false when p
// took it at its first try, once d had passed: the machine answered too late
// to tell, and widening tries a longer d.
func takenNoSooner(t *testing.T, p shedlock.LockProvider, c shedlock.LockConfig, start time.Time, d time.Duration, what, bound string) bool {
	t.Helper()
	if tryLock(t, p, c) {
		if got := time.Since(start); got < d {
			t.Fatalf("%s within %v, before %s %v", what, got, bound, d)
		}
		return false
	}
	lockWithin(t, p, c, d+10*time.Second)
	if got := time.Since(start); got < d-slack {
		t.Fatalf("%s after %v, before %s %v", what, got, bound, d)
	}
	return true
}

func testLateUnlockOtherOwner(t *testing.T, newProvider NewProviderFunc) {
	a, b, c3 := newProvider(t), newProvider(t), newProvider(t)
	short := cfg("job", 200*time.Millisecond, 0)
	old := mustLock(t, a, short)
	lockWithin(t, b, cfg("job", time.Minute, 0), 10*time.Second)
	if err := old.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("late Unlock: want ErrLockLost, got %v", err)
	}
	mustNotLock(t, c3, short)
	mustNotLock(t, a, short)
}

func testLateUnlockSameOwner(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	old := mustLock(t, a, cfg("job", 200*time.Millisecond, 0))
	lockWithin(t, a, cfg("job", time.Minute, 0), 10*time.Second) // same owner, new term
	if err := old.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("late Unlock of the older term: want ErrLockLost, got %v", err)
	}
	mustNotLock(t, b, cfg("job", time.Minute, 0))
}

func testExtend(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	ctx := context.Background()
	widening(t, 300*time.Millisecond, func(name string, most time.Duration) bool {
		c := cfg(name, most, 0)
		extended := 10 * most
		// held reports whether the lock was held for a call that returned err:
		// an error fails t when the call returned before until had passed
		// since a time the lock was last set from, and leaves the result
		// open (false) when it returned later.
		held := func(what string, err error, since time.Time, until time.Duration) bool {
			t.Helper()
			if err == nil {
				return true
			}
			if errors.Is(err, shedlock.ErrLockLost) && time.Since(since) >= until {
				return false
			}
			t.Fatalf("%s: %v, returned %v into the %v the lock was due to be held", what, err, time.Since(since), until)
			return false
		}
		start := time.Now()
		l := mustLock(t, a, c)
		extendedAt := time.Now()
		if !held("Extend", l.Extend(ctx, extended, 0), start, most) {
			return false
		}
		for time.Since(start) < 3*most {
			if tryLock(t, b, c) {
				if got := time.Since(extendedAt); got < extended {
					t.Fatalf("extended lock taken by another instance within %v of an Extend by %v", got, extended)
				}
				return false
			}
			time.Sleep(20 * time.Millisecond) // poll interval
		}
		again := time.Now()
		if !held("second Extend", l.Extend(ctx, extended, 0), extendedAt, extended) {
			return false
		}
		if !held("Unlock after Extend", l.Unlock(ctx), again, extended) {
			return false
		}
		mustLock(t, b, c)
		return true
	})
}

func testExtendExpired(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	const most = 200 * time.Millisecond
	c := cfg("job", most, 0)

	expired := mustLock(t, a, c)
	start := time.Now()
	for time.Since(start) < most+50*time.Millisecond {
		time.Sleep(10 * time.Millisecond) // let the lock run out, unused by anyone
	}
	if err := expired.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Extend of an expired lock: want ErrLockLost, got %v", err)
	}

	lockWithin(t, b, cfg("job", time.Minute, 0), 10*time.Second)
	if err := expired.Extend(context.Background(), time.Minute, 0); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Extend of a lock another instance holds: want ErrLockLost, got %v", err)
	}
	mustNotLock(t, a, c)
}

func testDoubleUnlock(t *testing.T, newProvider NewProviderFunc) {
	a := newProvider(t)
	l := mustLock(t, a, cfg("job", time.Minute, 0))
	if err := l.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(context.Background()); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("second Unlock: want ErrLockLost, got %v", err)
	}
}

func testInvalidConfig(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	long := strings.Repeat("x", shedlock.MaxNameLength+1)
	cases := []struct {
		cfg  shedlock.LockConfig
		want string // in the message
	}{
		{cfg("", time.Minute, 0), "Name is empty"},
		{cfg(long, time.Minute, 0), "Name has 65 characters"},
		{cfg("job", 0, 0), `lock "job": LockAtMostFor must be at least 1ms, got 0s`},
		{cfg("job", -time.Second, 0), `lock "job": LockAtMostFor must be at least 1ms, got -1s`},
		{cfg("job", 600, 0), `lock "job": LockAtMostFor must be at least 1ms, got 600ns`},
		{cfg("job", time.Minute, 500*time.Microsecond), `lock "job": LockAtLeastFor must be 0 or at least 1ms, got 500µs`},
		{cfg("job", time.Minute, -time.Second), `lock "job": LockAtLeastFor must be >= 0`},
		{cfg("job", time.Minute, 2*time.Minute), `lock "job": LockAtLeastFor (2m0s) must not exceed LockAtMostFor (1m0s)`},
	}
	for _, tc := range cases {
		l, err := a.TryLock(context.Background(), tc.cfg)
		if l != nil || !errors.Is(err, shedlock.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("TryLock(%+v): want ErrInvalidConfig with %q, got lock=%v err=%v", tc.cfg, tc.want, l != nil, err)
		}
	}
	// Nothing was written: the names are still free for another instance.
	mustLock(t, b, cfg("job", time.Minute, 0))

	l := mustLock(t, a, cfg("other", time.Minute, 0))
	if err := l.Extend(context.Background(), 0, 0); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("Extend(0, 0): want ErrInvalidConfig, got %v", err)
	}
	if err := l.Extend(context.Background(), time.Second, time.Minute); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("Extend(1s, 1m): want ErrInvalidConfig, got %v", err)
	}
	mustNotLock(t, b, cfg("other", time.Minute, 0)) // a rejected Extend left the lock as it was
}

func testCancelledContext(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l, err := a.TryLock(ctx, cfg("job", time.Minute, 0))
	if l != nil || err == nil || errors.Is(err, shedlock.ErrNotAcquired) {
		t.Fatalf("TryLock with a cancelled context: want a context error, got lock=%v err=%v", l != nil, err)
	}
	mustLock(t, b, cfg("job", time.Minute, 0))
}

// testAssertLocked: a lock taken by hand and put in a context with
// shedlock.ContextWithLock satisfies AssertLocked only while it is held: not
// after its Unlock, not once its LockAtMostFor has run out, and not while
// another instance holds it. Every Lock must implement shedlock.HoldChecker.
func testAssertLocked(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	ctx := context.Background()
	released := mustLock(t, a, cfg("released", time.Minute, 0))
	if _, ok := released.(shedlock.HoldChecker); !ok {
		t.Fatalf("%T does not implement shedlock.HoldChecker: AssertLocked cannot tell when it is no longer held", released)
	}
	lockedCtx := shedlock.ContextWithLock(ctx, released)
	if err := shedlock.AssertLocked(lockedCtx); err != nil {
		t.Fatalf("AssertLocked while held: %v", err)
	}
	if err := released.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := shedlock.AssertLocked(lockedCtx); !errors.Is(err, shedlock.ErrNotLocked) {
		t.Fatalf("AssertLocked after Unlock: want ErrNotLocked, got %v", err)
	}

	const most = 200 * time.Millisecond
	expiring := mustLock(t, a, cfg("expiring", most, 0))
	expiringCtx := shedlock.ContextWithLock(ctx, expiring)
	lockWithin(t, b, cfg("expiring", time.Minute, 0), most+10*time.Second)
	err := shedlock.AssertLocked(expiringCtx)
	if !errors.Is(err, shedlock.ErrNotLocked) || !(errors.Is(err, shedlock.ErrLockExpired) || errors.Is(err, shedlock.ErrLockLost)) {
		t.Fatalf("AssertLocked while another instance holds the lock: want ErrNotLocked wrapping ErrLockExpired or ErrLockLost, got %v", err)
	}
}

// testFenceIncreases checks fencing tokens where the store gives them: every
// lock carries one or none does, and each acquisition's is larger than every
// earlier one's, by another provider, after a release and after the lock ran
// out; Extend keeps it.
func testFenceIncreases(t *testing.T, newProvider NewProviderFunc) {
	a, b := newProvider(t), newProvider(t)
	ctx := context.Background()
	first := mustLock(t, a, cfg("job", time.Minute, 0))
	last, fenced := shedlock.FenceOf(first)
	if err := first.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if f, ok := shedlock.FenceOf(first); f != last || ok != fenced {
		t.Fatalf("token after Extend: %d, %v; want the acquisition's, %d, %v", f, ok, last, fenced)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	next := func(why string, l shedlock.Lock) {
		t.Helper()
		f, ok := shedlock.FenceOf(l)
		switch {
		case ok != fenced:
			t.Fatalf("%s: a token is %v, but %v on the first lock", why, ok, fenced)
		case ok && f <= last:
			t.Fatalf("%s: token %d, not larger than the last, %d", why, f, last)
		}
		last = f
	}
	for i, p := range []shedlock.LockProvider{b, a, b} {
		l := mustLock(t, p, cfg("job", time.Minute, 0))
		next(fmt.Sprintf("acquisition %d", i+2), l)
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
	next("a lock left to run out", mustLock(t, a, cfg("job", 200*time.Millisecond, 0)))
	next("taken after it ran out", lockWithin(t, b, cfg("job", time.Minute, 0), 10*time.Second))
}
