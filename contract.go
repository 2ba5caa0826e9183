package shedlock

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/shedlock-go/shedlock/internal/control"
	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// The store contract: what a store implements to hold locks for the executor
// and the Leader. LockProvider and Lock are the whole of it; the other
// interfaces are optional, and the executor uses each where a provider has it:
// attempts in one round trip (BatchLocker), the fire-time record CatchUp needs
// (FireLocker), the store's rounding of holds (HoldGranularity), its name
// comparison (NameKeyer), its limits (ConfigChecker), its pool (PoolSizer),
// and an operator's pause and run-now (Controller, RunRequester).

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

// BatchLocker is a LockProvider that can make attempts on many locks in one
// round trip. At a herd's tick, when attempts queue at an executor whose
// provider is one, the executor sends the queued attempts together instead of
// one statement each; a lone attempt still goes alone, through TryLock.
type BatchLocker interface {
	LockProvider
	// TryLockBatch makes one attempt on each of cfgs, together, and returns
	// one LockResult per config, in the order of cfgs: the lock taken, or why
	// not (ErrNotAcquired when another instance holds it; a config the store
	// refuses, for that config alone). One config's problem is its own: a
	// name the store keeps in another config's row, or a row another
	// transaction holds, fails that config, not the others nor the batch. The
	// names of cfgs are distinct. Each
	// acquisition is conditional on its own row, has its own token and fencing
	// token, and is exactly what TryLock would have taken. The store takes the
	// rows in one fixed order, so that two instances' batches never deadlock.
	//
	// A non-nil error is the batch's as a whole (the store failed, ctx ended):
	// then the results are nil, and a lock the store may have taken before the
	// failure is held until its LockAtMostFor, as with a TryLock whose
	// response was lost.
	TryLockBatch(ctx context.Context, cfgs []LockConfig) ([]LockResult, error)
}

// LockResult is one attempt of a batch (BatchLocker): Lock when it took the
// lock, else Err.
type LockResult struct {
	Lock Lock
	Err  error
}

// FireLocker is a LockProvider that records, beside each lock, the fire time
// of the lock's last run that succeeded: what CatchUp needs. The SQL
// providers, shedlockredis and shedlocketcd implement it; a store of another
// kind does by keeping that time beside its lock key and making the take
// conditional on it, atomically.
type FireLocker interface {
	// TryLockFire takes cfg's lock for the run of fire time fire, only if the
	// lock is free and the recorded fire time is older than fire, or there is
	// none, in one atomic step; ErrNotAcquired otherwise (LastFire tells a lock
	// held from a fire time already done). Times are kept to the millisecond.
	TryLockFire(ctx context.Context, cfg LockConfig, fire time.Time) (FireLock, error)
	// LastFire returns the fire time recorded for name; ok is false when none is.
	LastFire(ctx context.Context, name string) (fire time.Time, ok bool, err error)
}

// FireLock is a lock taken by TryLockFire. Its Unlock releases it without
// recording anything: the run failed, and its fire time may run again at once.
type FireLock interface {
	Lock
	// UnlockSucceeded releases the lock, keeping it until leastFor after it was
	// taken, and records the lock's fire time as succeeded, unless a later one
	// is recorded, in one statement. ErrLockLost when the lock is no longer
	// ours; nothing is recorded then.
	UnlockSucceeded(ctx context.Context, leastFor time.Duration) error
}

// HoldGranularity is an optional interface of a LockProvider whose store keeps
// a lock for coarser times than it is asked, such as etcd's leases of whole
// seconds with a minimum TTL. Schedule asks it, so that the hold of each run
// never outlasts the skew bound before the next fire time: a hold that did
// would make the next fire time find the lock held, and skip it (or, with
// CatchUp, run it late, at a retry).
//
// A store that keeps what it is asked, to the millisecond, does not implement
// it.
type HoldGranularity interface {
	// HoldGranularity returns how the store rounds a hold, step and min both
	// > 0. A LockAtLeastFor of d is kept for d rounded up to a multiple of
	// step, and at least min, counted from the acquisition: Schedule asks for
	// the largest multiple of step that ends no later than the skew bound
	// before the next fire time, skips a run as late when that is below min,
	// and refuses a spec whose fire times are too close for one. Schedule
	// asks before it accepts a spec and at every run: min must be the
	// store's by then (a store may ask it at the first call, within a bound). What is left of a
	// FireLock.UnlockSucceeded's leastFor when the lock is released must be
	// kept rounded down to a multiple of step instead, and not at all when
	// that is below min: the store cannot know when the run ends, and the
	// record of the fire time, not the hold, keeps it to one run.
	HoldGranularity() (step, min time.Duration)
}

// PoolSizer is a LockProvider that can tell the most connections its client
// opens at once. The SQL providers report their *sql.DB's MaxOpenConnections
// (0: no limit), shedlockredis its client's PoolSize.
type PoolSizer interface {
	PoolSize() int
}

// Controller is implemented by a store whose jobs an operator can steer on
// every instance at once: the SQL providers, shedlockredis and shedlocketcd.
// What it writes lives beside the lock, in the store, so that every pod sees
// it at its next attempt; none of it is ever a far-future lock end.
type Controller interface {
	// Pause stops the job of this name on every instance until until, or
	// until Resume when until is zero: each attempt is refused with ErrPaused,
	// decided by the acquiring statement itself. A run under way goes on.
	Pause(ctx context.Context, name string, until time.Time) error
	// Resume ends a pause; a name that is not paused is no error.
	Resume(ctx context.Context, name string) error
	// RunNow asks for one run of the job, on whichever instance checks first
	// (see RunRequester), and returns how many runs are asked for and not yet
	// run. Each call is one run: two calls are two runs.
	RunNow(ctx context.Context, name string) (pending int64, err error)
}

// RunRequester is implemented by a store that keeps run-now requests
// (Controller.RunNow). An executor with jobs on it asks every
// WithRunNowCheck interval which of its names have one, runs such a job under
// its lock as at a fire time, and marks one request run once the task
// returned: a pod killed mid-run leaves the request for another.
type RunRequester interface {
	// RunRequests returns, for those of names with requests not yet run, how
	// many there are. One statement (or round trip) for all the names.
	RunRequests(ctx context.Context, names []string) (map[string]int64, error)
	// RunDone marks one request of name run, if one is left; held is the lock
	// the run took, so that only a run that still holds it counts.
	RunDone(ctx context.Context, name string, held Lock) error
}

// Control is a job's pause and run-now state as the store keeps it: Paused,
// PausedUntil (zero while paused until Resume) and RunRequests (runs asked for
// and not yet run). LockInfo carries it.
type Control = control.Control

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
const MinLockAtMostFor = lockcfg.MinLockAtMostFor

func validateDurations(name string, mostFor, leastFor time.Duration) error {
	return lockcfg.Durations(name, mostFor, leastFor)
}

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
