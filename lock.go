package shedlock

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

// MaxNameLength is the longest lock name, in characters: the name column is VARCHAR(64).
const MaxNameLength = 64

// LockConfig names a lock and bounds how long it is held.
type LockConfig struct {
	// Name identifies the job across all instances: 1..64 characters.
	Name string
	// LockAtMostFor bounds how long a holder that crashed keeps the lock. It must be
	// longer than the job normally runs: a job still running when it ends may run
	// beside another instance's run. Must be > 0.
	LockAtMostFor time.Duration
	// LockAtLeastFor is the minimum time the lock is held, even if the job ends
	// sooner: it stops a fast job from running again on an instance whose clock or
	// schedule is slightly behind. 0 <= LockAtLeastFor <= LockAtMostFor.
	LockAtLeastFor time.Duration
}

// Validate reports the first problem with c, as an error wrapping [ErrInvalidConfig]
// that names the lock and the field.
func (c LockConfig) Validate() error {
	n := utf8.RuneCountInString(c.Name)
	switch {
	case c.Name == "":
		return fmt.Errorf("%w: Name is empty", ErrInvalidConfig)
	case !utf8.ValidString(c.Name):
		return fmt.Errorf("%w: lock %q: Name is not valid UTF-8", ErrInvalidConfig, c.Name)
	case n > MaxNameLength:
		return fmt.Errorf("%w: lock %q: Name has %d characters, at most %d fit the name column",
			ErrInvalidConfig, c.Name, n, MaxNameLength)
	}
	return validateDurations(c.Name, c.LockAtMostFor, c.LockAtLeastFor)
}

// MinLockAtMostFor is the shortest LockAtMostFor every store accepts: lock times
// are kept to the millisecond.
const MinLockAtMostFor = time.Millisecond

func validateDurations(name string, mostFor, leastFor time.Duration) error {
	switch {
	case mostFor < MinLockAtMostFor:
		return fmt.Errorf("%w: lock %q: LockAtMostFor must be at least %v, got %v "+
			"(a bare number is nanoseconds: write 600*time.Second, not 600)", ErrInvalidConfig, name, MinLockAtMostFor, mostFor)
	case leastFor < 0:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor must be >= 0, got %v", ErrInvalidConfig, name, leastFor)
	case leastFor > 0 && leastFor < time.Millisecond:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor must be 0 or at least 1ms, got %v "+
			"(a bare number is nanoseconds)", ErrInvalidConfig, name, leastFor)
	case leastFor > mostFor:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor (%v) must not exceed LockAtMostFor (%v)",
			ErrInvalidConfig, name, leastFor, mostFor)
	}
	return nil
}

type lockKey struct{}

// ContextWithLock returns a copy of parent that carries l: LockFromContext
// returns it and AssertLocked passes. The executor gives every task such a
// context itself; use this where a lock is taken by hand with TryLock, and in
// tests (shedlocktest.LockedContext gives one with no store behind it).
func ContextWithLock(parent context.Context, l Lock) context.Context {
	return context.WithValue(parent, lockKey{}, l)
}

// LockFromContext returns the lock a task runs under: the executor puts it in
// every task's context. Through it the task can Extend its lock by hand, which
// also moves its context's deadline; its Unlock is refused, since the executor
// releases the lock when the task returns.
func LockFromContext(ctx context.Context) (Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(Lock)
	return l, ok && l != nil
}

// AssertLocked reports whether ctx belongs to code running under a lock, as Java
// ShedLock's LockAssert does: nil inside a task run by the executor, or under a
// context from ContextWithLock. Otherwise it returns an error wrapping
// ErrNotLocked, also when the lock can tell that it was lost, ran out or was
// released (see HoldChecker; the error then wraps that cause too). Every lock
// of this package's providers and of the executor can tell. Call it at the top of code that must
// never run unlocked, so that a caller who forgot the lock finds out at once.
func AssertLocked(ctx context.Context) error {
	l, ok := LockFromContext(ctx)
	if !ok {
		return ErrNotLocked
	}
	if c, ok := l.(HoldChecker); ok {
		if err := c.CheckHeld(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotLocked, err)
		}
	}
	return nil
}

// FenceOf returns l's fencing token: larger for every later acquisition of the
// same name, by any instance, in the same store. ok is false where the store
// keeps none (a Java ShedLock table without the column). Locks that carry one
// have Fence() (int64, bool); FenceOf uses it.
//
// The token is the acquisition's, kept through Extend. A job passes it with
// every write it protects, and the store that receives the write refuses a
// token older than the last it saw:
//
//	UPDATE orders SET state = ?, last_fence = ? WHERE id = ? AND (last_fence IS NULL OR last_fence < ?)
//
// A holder paused past its lease (a long GC pause, a stopped VM) then cannot
// overwrite what the next holder wrote: its write changes no row. The SQL
// providers write the token in the acquiring statement itself when the table
// has the fence column (migration 0002, or EnsureTable for a new table), and
// shedlockredis in the same script; see "The guarantee, and its limits" in the
// README for what holds when Java ShedLock pods share the table.
func FenceOf(l Lock) (fence int64, ok bool) {
	if f, is := l.(interface{ Fence() (int64, bool) }); is {
		return f.Fence()
	}
	return 0, false
}

// FenceFromContext returns the fencing token of the lock a task runs under
// (see LockFromContext and FenceOf): ok is false outside a locked task or when
// the store keeps no token.
func FenceFromContext(ctx context.Context) (fence int64, ok bool) {
	l, is := LockFromContext(ctx)
	if !is {
		return 0, false
	}
	return FenceOf(l)
}
