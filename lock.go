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

// LockProvider takes locks in a shared store.
type LockProvider interface {
	// TryLock makes one attempt; ErrNotAcquired when another instance holds the lock.
	TryLock(ctx context.Context, cfg LockConfig) (Lock, error)
}

// ConfigChecker is implemented by a LockProvider whose store limits a LockConfig
// beyond [LockConfig.Validate], such as the latest lock_until a column can hold.
// The executor calls it when a job is registered, so that a config the store
// would refuse on every run is an error at once, not on every tick.
type ConfigChecker interface {
	// CheckConfig reports why the store would refuse cfg, as an error wrapping
	// ErrInvalidConfig; nil when it would not. It touches no store.
	CheckConfig(cfg LockConfig) error
}

// NameKeyer is implemented by a LockProvider whose store may keep two
// different names in one row, as a collation that ignores case or accents
// does. The executor asks it once per name, when a job is registered, and
// refuses a second job under a name the store keeps in an already registered
// name's row (ErrDuplicateName), since the two would block each other. The SQL
// providers are NameKeyers: on MySQL and MariaDB one statement asks the name
// column's collation (its weight of the name); on PostgreSQL under a
// deterministic collation and on SQLite the key is the name itself, with no
// statement.
type NameKeyer interface {
	// NameKey returns the form under which the store compares name: two names
	// with one key are one row. An error wrapping ErrInvalidConfig says the
	// store cannot keep name as given; another error, that it could not be
	// asked (the executor then registers the name, and an attempt on a name
	// that turns out to be another's row fails with ErrDuplicateName).
	NameKey(ctx context.Context, name string) (string, error)
}

// Lock is a lock held by this instance.
type Lock interface {
	// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken.
	// Only the holder can release: an Unlock after the lock was lost changes nothing.
	Unlock(ctx context.Context) error
	// Extend moves the lock's end to now + lockAtMostFor, if the lock is still ours
	// and has not expired; ErrLockLost otherwise. lockAtLeastFor replaces the
	// minimum hold used by Unlock, still counted from when the lock was taken.
	Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error
}

// HoldChecker is implemented by a Lock that can tell, without asking its store,
// that it can no longer be relied on. AssertLocked asks it.
type HoldChecker interface {
	// CheckHeld returns nil while the lock is held as far as its holder knows,
	// else an error that says why not, wrapping ErrLockLost (released, or found
	// taken) or ErrLockExpired (past its LockAtMostFor).
	CheckHeld() error
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
