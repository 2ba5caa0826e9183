package shedlock

import (
	"errors"

	"github.com/shedlock-go/shedlock/internal/apply"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// The errors every store returns. They are the values of package lockerr,
// which the stores use, so errors.Is matches whichever package made them.
var (
	// ErrNotAcquired is returned by TryLock when the lock is held: by another
	// instance, or by an earlier acquisition not yet released.
	ErrNotAcquired = lockerr.NotAcquired
	// ErrLockLost is returned by Extend and Unlock when the lock is no longer ours:
	// it expired, and may have been taken by another instance.
	ErrLockLost = lockerr.LockLost
	// ErrInvalidConfig wraps every rejected LockConfig.
	ErrInvalidConfig = lockerr.InvalidConfig
	// ErrInvalidOption wraps every rejected provider, executor or job option,
	// and a nil one.
	ErrInvalidOption = lockerr.InvalidOption
	// ErrUnsafeStore is returned on a provider's first use when the store, its
	// session settings or its table would break mutual exclusion; the message says
	// what to change.
	ErrUnsafeStore = lockerr.UnsafeStore
	// ErrReleaseFailed is returned by Unlock when every attempt to release failed:
	// the lock stays held until its lock_until.
	ErrReleaseFailed = lockerr.ReleaseFailed
	// ErrLockNotFound is returned by Inspect and ForceUnlock for a name the table
	// has no row of.
	ErrLockNotFound = lockerr.LockNotFound
	// ErrLockChanged is returned by Admin.ForceUnlockSeen when another
	// acquisition holds the lock than the one shown, and by ForceUnlock when
	// the lock kept changing hands while it tried to free it.
	ErrLockChanged = lockerr.LockChanged
	// ErrLockExpired is the cause of a task context ended because the lock's
	// LockAtMostFor is running out: past it another instance may take the lock.
	// AssertLocked wraps it for a lock past its end.
	ErrLockExpired = lockerr.LockExpired
	// ErrPaused is returned by TryLock for a job an operator paused (see
	// Controller). It wraps ErrNotAcquired: code that skips a held lock skips a
	// paused one too. The store decides it inside the acquiring statement.
	ErrPaused = lockerr.Paused
)

// The errors of the executor.
var (
	// ErrStopped is returned by Run, Wrap and FixedDelay after Executor.Stop, and
	// is the cause of a task context that Stop ended.
	ErrStopped = errors.New("shedlock: executor stopped")
	// ErrDuplicateName is returned when a second job is registered under a lock
	// name that one executor already runs: the two would block each other. Names
	// differing only by case, accents, emoji or trailing spaces are one name, as the store's
	// collation makes them one row; where the provider tells how its store
	// compares names (NameKeyer), names it keeps in one row are one name too.
	// An attempt on a name that is another's row, which registration could not
	// see, fails with it as well as with ErrInvalidConfig, naming both.
	ErrDuplicateName = lockerr.DuplicateName
	// ErrInvalidJob is returned for a job the executor cannot run as given: a nil
	// task or cron job, or a fixed delay that is not > 0.
	ErrInvalidJob = errors.New("shedlock: invalid job")
	// ErrNotStarted is returned by Stop when fixed-delay jobs were registered but
	// Start was never called: they never ran.
	ErrNotStarted = errors.New("shedlock: executor never started")
	// ErrTaskPanicked wraps a panic recovered from a task, with its value and stack.
	ErrTaskPanicked = errors.New("shedlock: task panicked")
)

// applyOptions is the one option idiom of every constructor here and in the
// sibling modules (internal/apply).
func applyOptions[T any, O ~func(*T) error](ctor string, dst *T, opts []O) error {
	return apply.Options(ctor, dst, opts)
}
