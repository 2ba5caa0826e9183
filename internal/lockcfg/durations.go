// Package lockcfg holds the checks of a LockConfig's durations, so that the
// stores need not import the root package to check an Extend: the name was
// checked when the lock was taken, and an Extend checks only what it brings
// anew. The messages are the root's (LockConfig.Validate); the root's checks
// are meant to call these.
//
// The store modules import it across module lines: add, never change or
// remove (see package apply).
package lockcfg

import (
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// MinLockAtMostFor is shedlock.MinLockAtMostFor: lock times are kept to the
// millisecond.
const MinLockAtMostFor = time.Millisecond

// Durations reports the first problem with the durations of the lock named
// name, as an error wrapping lockerr.InvalidConfig (shedlock.ErrInvalidConfig).
func Durations(name string, mostFor, leastFor time.Duration) error {
	switch {
	case mostFor < MinLockAtMostFor:
		return fmt.Errorf("%w: lock %q: LockAtMostFor must be at least %v, got %v "+
			"(a bare number is nanoseconds: write 600*time.Second, not 600)", lockerr.InvalidConfig, name, MinLockAtMostFor, mostFor)
	case leastFor < 0:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor must be >= 0, got %v", lockerr.InvalidConfig, name, leastFor)
	case leastFor > 0 && leastFor < time.Millisecond:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor must be 0 or at least 1ms, got %v "+
			"(a bare number is nanoseconds)", lockerr.InvalidConfig, name, leastFor)
	case leastFor > mostFor:
		return fmt.Errorf("%w: lock %q: LockAtLeastFor (%v) must not exceed LockAtMostFor (%v)",
			lockerr.InvalidConfig, name, leastFor, mostFor)
	}
	return nil
}
