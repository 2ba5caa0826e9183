// Package lockerr holds the sentinel errors that the stores return, so that the
// store packages need not import the root package. The root package re-exports
// each one under its public name, so errors.Is matches the same values.
package lockerr

import (
	"errors"
	"fmt"
)

var (
	// NotAcquired is shedlock.ErrNotAcquired.
	NotAcquired = errors.New("shedlock: not acquired: the lock is held")
	// LockLost is shedlock.ErrLockLost.
	LockLost = errors.New("shedlock: lock lost: no longer held by this instance")
	// InvalidConfig is shedlock.ErrInvalidConfig.
	InvalidConfig = errors.New("shedlock: invalid lock config")
	// InvalidOption is shedlock.ErrInvalidOption.
	InvalidOption = errors.New("shedlock: invalid option")
	// UnsafeStore is shedlock.ErrUnsafeStore.
	UnsafeStore = errors.New("shedlock: store cannot keep locks safely")
	// ReleaseFailed is shedlock.ErrReleaseFailed.
	ReleaseFailed = errors.New("shedlock: release failed; the lock stays held until its lock_until")
	// LockNotFound is shedlock.ErrLockNotFound.
	LockNotFound = errors.New("shedlock: no such lock")
)

// LockExpired is shedlock.ErrLockExpired.
var LockExpired = errors.New("shedlock: lock's LockAtMostFor ran out")

// DuplicateName is shedlock.ErrDuplicateName.
var DuplicateName = errors.New("shedlock: lock name already registered on this executor")

// LockChanged is shedlock.ErrLockChanged.
var LockChanged = errors.New("shedlock: the lock changed since it was read")

// Paused is shedlock.ErrPaused: it wraps NotAcquired, so that code that skips
// a held lock skips a paused one too.
var Paused = fmt.Errorf("%w: an operator paused the job", NotAcquired)
