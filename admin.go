package shedlock

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Admin is what an operator needs of a lock table: to see the locks as the
// database sees them, to free one whose holder is known to be dead, and to know
// that the store can be used. Every SQL provider implements it, and so does
// shedlockredis.Provider (where a lock that is not held has no key: it is
// ErrLockNotFound, and EnsureTable has nothing to create).
type Admin interface {
	// Locks returns every lock in the table, by name, with the database's view
	// of whether each is held now.
	Locks(ctx context.Context) ([]LockInfo, error)
	// Inspect returns the lock of exactly this name; ErrLockNotFound if the table
	// has no row of that name.
	Inspect(ctx context.Context, name string) (LockInfo, error)
	// ForceUnlock frees the lock of exactly this name whoever holds it, and
	// returns the lock as it was just before: whom it was taken from. It makes
	// the holder's next Unlock or Extend return ErrLockLost. ErrLockNotFound if the
	// table has no row of that name.
	//
	// It is safe when the holder is dead (its process is gone, or hung for good),
	// or when the job may run twice at once. It is not safe while the holder is
	// still running the job: another instance can take the lock at once and run
	// beside it, since a holder learns of the loss only when it next touches the
	// lock (an executor with WithKeepAlive does so within about a third of
	// LockAtMostFor, and then ends the task's context with ErrLockLost).
	ForceUnlock(ctx context.Context, name string) (LockInfo, error)
	// ForceUnlockSeen frees the acquisition seen shows (seen as Inspect or
	// Locks returned it: the same LockedBy and LockedAt), so that an operator
	// who was shown one holder frees that acquisition, never one taken since.
	// One extended or released since is still that acquisition: it is freed,
	// and returned as it was just before. Another acquisition is an error
	// wrapping ErrLockChanged that names the holder now, and nothing is freed;
	// ErrLockNotFound if the row is gone. The same caution as ForceUnlock
	// applies.
	ForceUnlockSeen(ctx context.Context, seen LockInfo) (LockInfo, error)
	// HealthCheck reports whether the store is reachable and the table usable for
	// locks: the provider's first-use checks (once they have passed, they are not
	// repeated), then on every call a statement that reads and writes the table
	// and changes nothing. It suits a readiness probe.
	HealthCheck(ctx context.Context) error
	// EnsureTable creates the lock table if it does not exist.
	EnsureTable(ctx context.Context) error
}

// LockInfo is one row of a lock table as the database sees it. Held and
// TimeLeft are computed by the database against its own clock, not this
// process's.
type LockInfo struct {
	// Name is the lock's name, as stored.
	Name string
	// LockedBy is the last holder. A provider of this package writes its owner
	// (see WithLockedBy), a suffix of its own and an acquisition number:
	// "pod-a#3f9c2b1e7d4a6058.17"; Java ShedLock writes the host name.
	// [ForceUnlockedBy] after a ForceUnlock.
	LockedBy string
	// LockedAt is when the last holder took the lock, in UTC.
	LockedAt time.Time
	// LockUntil is when the lock ends, in UTC: the end of LockAtMostFor while
	// held, the end of LockAtLeastFor or the release time once released.
	LockUntil time.Time
	// Held reports whether LockUntil is after the database's now: no instance
	// can take the lock until then.
	Held bool
	// TimeLeft is how long the lock stays held by the database's clock; 0 when
	// it is not held.
	TimeLeft time.Duration
	// Control is the job's pause and run-now state, where the store keeps one
	// (Controller); zero otherwise.
	Control
}

// ForceUnlockedBy is what ForceUnlock writes to locked_by. No provider's owner
// can equal it (theirs all contain '#'), so that the holder it was taken from
// finds the lock lost.
const ForceUnlockedBy = sqlstore.ForceUnlockedBy
