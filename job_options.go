package shedlock

import (
	"fmt"
	"time"
)

// JobOption configures one job: a Run (through RunWith), a FixedDelay loop or a
// Wrap'ed cron job. It overrides the executor's option of the same purpose.
type JobOption func(*jobOptions) error

type jobOptions struct {
	keepAlive bool
	skew      time.Duration // Schedule's clock skew bound (ClockSkew)
	skewSet   bool

	catchUp      time.Duration // CatchUp's window; 0: off
	catchUpRetry time.Duration // CatchUpRetry; 0: DefaultCatchUpRetry
}

// KeepAlive turns keep-alive on or off for one job, whatever the executor's
// WithKeepAlive says.
func KeepAlive(on bool) JobOption {
	return func(o *jobOptions) error {
		o.keepAlive = on
		return nil
	}
}

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

// DefaultClockSkew is how far apart Schedule takes the instances' clocks to be
// at most, unless ClockSkew says otherwise.
const DefaultClockSkew = 500 * time.Millisecond

// ClockSkew sets, for a job added with Schedule, how far apart the instances'
// clocks may be, plus how long the acquiring statement may take to reach the
// store: the bound within which each fire time runs at most once and none is
// skipped. Default DefaultClockSkew. Other jobs ignore it. d must be >= 0.
func ClockSkew(d time.Duration) JobOption {
	return func(o *jobOptions) error {
		if d < 0 {
			return fmt.Errorf("%w: ClockSkew(%v): must be >= 0", ErrInvalidOption, d)
		}
		o.skew, o.skewSet = d, true
		return nil
	}
}
