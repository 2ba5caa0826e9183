package shedlock

import (
	"context"
	"fmt"
	"time"
)

// DefaultCatchUpRetry is how long after a failed, held or missed check an
// instance checks a catch-up job's fire time again, unless CatchUpRetry says
// otherwise.
const DefaultCatchUpRetry = time.Minute

// CatchUp makes a job added with Schedule run a fire time it missed: one at
// which no instance was up, or whose run failed (returned an error, panicked,
// or died with its pod). The store records, beside the lock, the last fire time
// whose run succeeded, in the statement that releases the run's lock. An
// instance checks when the job is added (its start), at each fire time, and
// again CatchUpRetry after a check that did not see the fire time succeed; a
// fire time that is due, newer than the recorded one and no older than window
// then runs once, under the lock. Several missed fire times collapse into one
// run, of the newest: a service down for ten fire times runs the job once when
// it returns.
//
// Each fire time succeeds at most once across the fleet: the store takes the
// lock only while the recorded fire time is older than the one the run stands
// for, in the acquiring statement itself. A run that fails releases its lock at
// once, so that any instance's next check runs it again; a run that succeeds
// holds it until the skew bound before the next fire time, as Schedule does. A
// fire time that passes its window without a run that succeeded is logged at
// warn level, once per instance that finds it, and sent to the listeners as
// EventMissedFireTime.
//
// It needs fire times that the instances share, as a cron spec gives: Schedule
// refuses it with an @every spec, whose fire times depend on when each
// instance started. It needs a provider that implements FireLocker (the SQL
// providers on a table with the last_success column of migration 0003, or one
// made by EnsureTable; shedlockredis; shedlocketcd): a table without the
// column is refused at the first check with ErrUnsafeStore, naming the
// migration to run. Run,
// FixedDelay, WithLock and Wrap refuse it with ErrInvalidOption: their cron
// spec, if any, is not the executor's to read (a cron.JobWrapper is given the
// job, not its entry), so they cannot tell which fire times were due.
//
// window must be > 0. A catch-up job's lock is taken with cfg.LockAtMostFor
// alone: a run killed mid-run is run again by another instance once that has
// passed, within the retry delay.
func CatchUp(window time.Duration) JobOption {
	return func(o *jobOptions) error {
		if window <= 0 {
			return fmt.Errorf("%w: CatchUp(%v): the window must be > 0", ErrInvalidOption, window)
		}
		o.catchUp = window
		return nil
	}
}

// CatchUpRetry sets how long after a check that did not see its fire time
// succeed an instance checks a CatchUp job again. Default
// DefaultCatchUpRetry, or half the window if that is shorter; never past the
// fire time's window. d must be > 0, and shorter than CatchUp's window
// (Schedule refuses it with ErrInvalidOption otherwise: a failed run would
// never be retried within its window). Without CatchUp it changes nothing.
//
// A checker also looks for its job's cron entry every retry delay (at least
// every second) while it has nothing due, and ends once the entry has been
// removed (c.Remove).
func CatchUpRetry(d time.Duration) JobOption {
	return func(o *jobOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: CatchUpRetry(%v): must be > 0", ErrInvalidOption, d)
		}
		o.catchUpRetry = d
		return nil
	}
}

// catchUpRetryDelay is the retry delay of a CatchUp job: CatchUpRetry's, which
// must be shorter than the window, or DefaultCatchUpRetry, no longer than
// half the window, so that a failed run is retried within it.
func (o jobOptions) catchUpRetryDelay(name string) (time.Duration, error) {
	if o.catchUpRetry == 0 {
		return min(DefaultCatchUpRetry, o.catchUp/2), nil
	}
	if o.catchUpRetry >= o.catchUp {
		return 0, fmt.Errorf("%w: lock %q: CatchUpRetry (%v) must be shorter than the CatchUp window (%v): "+
			"a run that fails is retried that long after, and past the window it is not run at all",
			ErrInvalidOption, name, o.catchUpRetry, o.catchUp)
	}
	return o.catchUpRetry, nil
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

// latestFire returns the latest fire time of next at or before now and after
// now - horizon; zero when there is none. next is a cron schedule's Next, which
// only goes forward: the search steps back from now, doubling, until a fire
// time lies between, then walks forward to the last one.
func latestFire(next func(time.Time) time.Time, now time.Time, horizon time.Duration) time.Time {
	const maxWalk = 100_000 // fire times walked at most; a cron spec fires at most once a second
	for step := time.Second; ; step *= 2 {
		step = min(step, horizon)
		t := next(now.Add(-step))
		if !t.IsZero() && !t.After(now) {
			for range maxWalk {
				n := next(t)
				if n.IsZero() || n.After(now) {
					break
				}
				t = n
			}
			return t
		}
		if step >= horizon {
			return time.Time{}
		}
	}
}
