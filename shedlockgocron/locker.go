// Package shedlockgocron lets gocron v2 schedulers on several instances run each
// job on one of them at a time, with the locks of any shedlock.LockProvider.
//
// A Locker is a gocron.Locker. Give it to every instance's scheduler, or to
// single jobs:
//
//	locker, err := shedlockgocron.NewLocker(provider, 10*time.Minute, 30*time.Second)
//	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
//	// or, per job: gocron.WithDistributedJobLocker(locker)
//
// The lock's name is the job's name: set it with gocron.WithName. Without it,
// gocron names a job after its function, so two jobs of one function share a
// lock, and a long package path may pass the 64 characters a name can have.
// For a closure that name is generated (main.main.func24.1) and changes
// whenever the code around it does, so the old and new pods of a rolling
// deploy would not exclude each other: the Locker refuses such a job at its
// first run (gocron shows a locker no job at registration), with an error
// wrapping shedlock.ErrInvalidConfig, logged, and the run skipped.
//
// For one leader per group instead of a lock per run, SchedulerOptions makes a
// scheduler run its jobs only while a shedlock.Leader leads, and the leader's
// Stop wait for the runs under way before it releases the lease:
//
//	s, err := gocron.NewScheduler(shedlockgocron.SchedulerOptions(leader)...)
//
// (NewElector alone gives gocron's elector, which cannot tell Stop of a run's
// end: see NewElector.)
//
// # Why LockAtLeastFor
//
// gocron releases the lock as soon as the job returns. Instances whose schedules
// are offset (pods started at different moments, an @every interval, clocks that
// differ) then each find the lock free in turn, and a fast job runs once per
// instance per tick (gocron issue 841). The lock is kept until LockAtLeastFor
// after it was taken: set it longer than the spread of the instances' schedules
// and shorter than the job's interval, and each tick runs once.
//
// shedlock.Executor.Schedule works that hold out for each run, until just
// before the next fire time, from the job's schedule. A Locker cannot: gocron
// gives it the job's name and context, not the fire time or the schedule, and
// updates the job's next run in the background while Lock runs. For a job at a
// fixed interval, WithJob(name, mostFor, interval - bound), where bound covers
// the spread of the instances' clocks, holds the lock the same way; for a cron
// expression whose gaps differ, run the job on robfig/cron with Schedule.
//
// # Limits
//
// gocron does not let a locker end the job it guards: a run that outlives
// LockAtMostFor can run beside the next instance's. Set LockAtMostFor above the
// longest run, or run the work through shedlock.Executor, whose task context ends
// with the lock.
//
// # Options
//
// Each option checks its own value. NewLocker returns a bad value, or a nil
// option, as an error wrapping shedlock.ErrInvalidOption that names the option
// (a nil one by its position, counting from 0).
package shedlockgocron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/apply"
)

// Locker is a gocron.Locker that takes shedlock locks. It is safe for
// concurrent use by several schedulers.
type Locker struct {
	provider shedlock.LockProvider
	defaults durations
	jobs     map[string]durations
	timeout  time.Duration // each release (WithUnlockTimeout)
	lockWait time.Duration // each take (WithLockTimeout)
	log      *slog.Logger
}

var _ gocron.Locker = (*Locker)(nil)

type durations struct{ mostFor, leastFor time.Duration }

// NewLocker returns a Locker on p that holds each job's lock at most
// lockAtMostFor (a crashed instance keeps it that long) and at least
// lockAtLeastFor; WithJob sets other durations for one job. Bad durations, or
// durations the provider refuses (see shedlock.ConfigChecker), are an error
// wrapping shedlock.ErrInvalidConfig; bad options wrap shedlock.ErrInvalidOption.
func NewLocker(p shedlock.LockProvider, lockAtMostFor, lockAtLeastFor time.Duration, opts ...Option) (*Locker, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: shedlockgocron.NewLocker: nil provider", shedlock.ErrInvalidOption)
	}
	l := &Locker{
		provider: p,
		defaults: durations{lockAtMostFor, lockAtLeastFor},
		jobs:     map[string]durations{},
		timeout:  DefaultUnlockTimeout,
		lockWait: DefaultLockTimeout,
		log:      slog.Default(),
	}
	if err := apply.Options("shedlockgocron.NewLocker", l, opts); err != nil {
		return nil, err
	}
	// The defaults are checked under a stand-in name: their durations are what matter.
	if err := l.check(shedlock.LockConfig{Name: "defaults", LockAtMostFor: lockAtMostFor, LockAtLeastFor: lockAtLeastFor}); err != nil {
		return nil, err
	}
	for name, d := range l.jobs {
		if err := l.check(shedlock.LockConfig{Name: name, LockAtMostFor: d.mostFor, LockAtLeastFor: d.leastFor}); err != nil {
			return nil, err
		}
	}
	return l, nil
}

func (l *Locker) check(cfg shedlock.LockConfig) error {
	if c, ok := l.provider.(shedlock.ConfigChecker); ok {
		return c.CheckConfig(cfg)
	}
	return cfg.Validate()
}

// config is the lock for the job named key.
func (l *Locker) config(key string) shedlock.LockConfig {
	d, ok := l.jobs[key]
	if !ok {
		d = l.defaults
	}
	return shedlock.LockConfig{Name: key, LockAtMostFor: d.mostFor, LockAtLeastFor: d.leastFor}
}

// Lock takes the lock of the job named key, for gocron, within WithLockTimeout
// (default DefaultLockTimeout) or ctx, whichever ends first: gocron waits for
// Lock in the goroutine that runs the job, so a store that stops answering
// must not hold it. An error tells gocron to skip this run: shedlock.ErrNotAcquired when another instance holds it (logged
// at debug level), any other error when the store failed or the name is not a
// valid lock name (logged at error level, since gocron drops it unless the job
// has an AfterLockError listener). A job without gocron.WithName whose function
// is a closure is refused with an error wrapping shedlock.ErrInvalidConfig, also
// logged: its generated name changes with the code (see the package doc).
func (l *Locker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	if err := checkName(key); err != nil {
		l.log.ErrorContext(ctx, "shedlock: job skipped: name it with gocron.WithName", "lock", key, "error", err)
		return nil, err
	}
	cfg := l.config(key)
	tctx, cancel := context.WithTimeout(ctx, l.lockWait)
	lock, err := l.provider.TryLock(tctx, cfg)
	cancel()
	switch {
	case errors.Is(err, shedlock.ErrNotAcquired):
		l.log.DebugContext(ctx, "shedlock: job skipped: its lock is held", "lock", key)
		return nil, err
	case err != nil:
		l.log.ErrorContext(ctx, "shedlock: job skipped: lock failed", "lock", key, "error", err)
		return nil, err
	}
	return &jobLock{lock: lock, name: key, timeout: l.timeout, log: l.log}, nil
}

// jobLock is one run's lock, released by gocron when the job returns.
type jobLock struct {
	lock    shedlock.Lock
	name    string
	timeout time.Duration
	log     *slog.Logger
}

// Unlock releases the lock, which stays held until LockAtLeastFor after it was
// taken. gocron passes the job's context, which is cancelled when the job is
// removed or the scheduler shuts down: the release runs with a context of its
// own, bounded by WithUnlockTimeout, so that the lock is not left held until
// LockAtMostFor. A failed release is also logged, since gocron drops the error.
func (j *jobLock) Unlock(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), j.timeout)
	defer cancel()
	err := j.lock.Unlock(ctx)
	if err != nil {
		j.log.ErrorContext(ctx, "shedlock: job's lock not released", "lock", j.name, "error", err)
	}
	return err
}
