package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"
)

// ContextJob is a cron.Job that can take a context. A job wrapped by WithLock
// that implements it gets the task context, which ends before the lock expires
// and on Stop; a plain cron.Job cannot be told.
type ContextJob interface {
	cron.Job
	RunContext(ctx context.Context) error
}

// JobFunc adapts a function to ContextJob.
type JobFunc func(ctx context.Context) error

// Run runs f with a background context, for a cron scheduler that calls it
// without WithLock. cron.Job has no error to return, so an error from f is logged
// with slog.Default() at error level.
func (f JobFunc) Run() {
	if err := f(context.Background()); err != nil {
		slog.Error("shedlock: job failed", "error", err)
	}
}

// RunContext runs f.
func (f JobFunc) RunContext(ctx context.Context) error { return f(ctx) }

// WithLock wraps one robfig/cron job: c.AddJob(spec, ex.WithLock("name", most, least)(job)).
// Bind it per job: a global cron.WithChain would give every job the same lock name.
//
// Like http.ServeMux.Handle, it panics on a programming error: an executor made
// with an invalid option or a nil provider, an invalid config or one the provider
// would refuse on every run, a name already registered on this executor (names
// differing only by case, accents, emoji or trailing spaces are one name), a nil job, or a
// wrapper applied to a second job. Wrap returns these as errors instead.
//
// After Stop it does not panic, since shutdown may race with registration: it
// logs a warning and the wrapped job never runs.
//
// The name stays registered for the executor's life, also after the job's cron
// entry is removed: a wrapper never learns the cron or the entry it was added
// as, so it cannot tell. A job that is removed and added again under its name
// (reconfiguration) needs Schedule, which frees the name once its entry is gone,
// or a new executor.
//
// The job keeps the executor's keep-alive setting (WithKeepAlive); Wrap takes
// job options for one job.
func (e *Executor) WithLock(name string, lockAtMostFor, lockAtLeastFor time.Duration) cron.JobWrapper {
	cfg := LockConfig{Name: name, LockAtMostFor: lockAtMostFor, LockAtLeastFor: lockAtLeastFor}
	if err := e.register(cfg); err != nil {
		if !errors.Is(err, ErrStopped) {
			panic(err)
		}
		e.log.Warn("shedlock: WithLock after Stop; the job will not run", "lock", name)
	}
	used := false
	return func(j cron.Job) cron.Job {
		if j == nil {
			panic(fmt.Errorf("%w: lock %q: WithLock applied to a nil job", ErrInvalidJob, name))
		}
		if used {
			panic(fmt.Errorf("shedlock: lock %q: a WithLock wrapper applied to a second job; call WithLock once per job", name))
		}
		used = true
		return e.lockedJob(cfg, j, jobOptions{keepAlive: e.keepAlive})
	}
}

// Wrap returns job wrapped to run under cfg's lock, with job options such as
// KeepAlive(true) (WithLock takes none: use Wrap for them). It returns the
// errors FixedDelay does: ErrInvalidOption for an executor made with a bad
// option or a nil job option, ErrInvalidConfig, ErrInvalidJob for a nil job,
// ErrDuplicateName and ErrStopped. As with WithLock, the name stays registered
// for the executor's life.
func (e *Executor) Wrap(cfg LockConfig, job cron.Job, opts ...JobOption) (cron.Job, error) {
	if job == nil {
		return nil, fmt.Errorf("%w: lock %q: Wrap: nil job", ErrInvalidJob, cfg.Name)
	}
	o, err := e.plainJobOptions(cfg.Name, "Wrap", opts)
	if err != nil {
		return nil, err
	}
	if err := e.register(cfg); err != nil {
		return nil, err
	}
	return e.lockedJob(cfg, job, o), nil
}

func (e *Executor) register(cfg LockConfig) error {
	storeKey, err := e.checkJob(cfg)
	if err != nil {
		return err
	}
	return e.reg.register(cfg.Name, storeKey)
}

func (e *Executor) lockedJob(cfg LockConfig, j cron.Job, o jobOptions) cron.Job {
	task := func(ctx context.Context) error {
		j.Run()
		return nil
	}
	if cj, ok := j.(ContextJob); ok {
		task = cj.RunContext
	}
	return cron.FuncJob(func() {
		// cron calls the job at its fire time: an attempt that waits past
		// the window of that fire time gives up (see ContextWithFireTime).
		_, _ = e.run(ContextWithFireTime(e.base, time.Now()), cfg, task, o) // run logs what fails
	})
}
