package shedlock

import (
	"context"
	"errors"
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

var (
	// ErrNotAcquired is returned by TryLock when the lock is held: by another
	// instance, or by an earlier acquisition not yet released.
	ErrNotAcquired = errors.New("shedlock: not acquired: the lock is held")
	// ErrLockLost is returned by Extend and Unlock when the lock is no longer ours:
	// it expired, and may have been taken by another instance.
	ErrLockLost = errors.New("shedlock: lock lost: no longer held by this instance")
	// ErrInvalidConfig wraps every rejected LockConfig.
	ErrInvalidConfig = errors.New("shedlock: invalid lock config")
	// ErrInvalidOption wraps every rejected provider or executor option.
	ErrInvalidOption = errors.New("shedlock: invalid option")
	// ErrUnsafeStore is returned on a provider's first use when the store, its
	// session settings or its table would break mutual exclusion; the message says
	// what to change.
	ErrUnsafeStore = errors.New("shedlock: store cannot keep locks safely")
	// ErrReleaseFailed is returned by Unlock when every attempt to release failed:
	// the lock stays held until its lock_until.
	ErrReleaseFailed = errors.New("shedlock: release failed; the lock stays held until its lock_until")
)
