package shedlock

import (
	"context"
	"fmt"

	"github.com/robfig/cron/v3"
	"time"
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

// Run runs f with a background context, for cron.
func (f JobFunc) Run() { _ = f(context.Background()) }

// RunContext runs f.
func (f JobFunc) RunContext(ctx context.Context) error { return f(ctx) }

// WithLock wraps one robfig/cron job: c.AddJob(spec, ex.WithLock("name", most, least)(job)).
// Bind it per job: a global cron.WithChain would give every job the same lock name.
//
// Like http.ServeMux.Handle, it panics on a programming error: an invalid config,
// a name already registered on this executor, or a wrapper applied to a second
// job. Wrap returns these as errors instead.
func (e *Executor) WithLock(name string, lockAtMostFor, lockAtLeastFor time.Duration) cron.JobWrapper {
	cfg := LockConfig{Name: name, LockAtMostFor: lockAtMostFor, LockAtLeastFor: lockAtLeastFor}
	if err := e.register(cfg); err != nil {
		panic(err)
	}
	used := false
	return func(j cron.Job) cron.Job {
		if used {
			panic(fmt.Errorf("%w: %q: one WithLock wrapper per job", ErrDuplicateName, name))
		}
		used = true
		return e.lockedJob(cfg, j)
	}
}

// Wrap returns job wrapped to run under cfg's lock, or an error when cfg is
// invalid or its name is already registered on this executor.
func (e *Executor) Wrap(cfg LockConfig, job cron.Job) (cron.Job, error) {
	if err := e.register(cfg); err != nil {
		return nil, err
	}
	return e.lockedJob(cfg, job), nil
}

func (e *Executor) register(cfg LockConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.registerLocked(cfg.Name)
}

func (e *Executor) lockedJob(cfg LockConfig, j cron.Job) cron.Job {
	task := func(ctx context.Context) error {
		j.Run()
		return nil
	}
	if cj, ok := j.(ContextJob); ok {
		task = cj.RunContext
	}
	return cron.FuncJob(func() {
		_, _ = e.Run(e.base, cfg, task) // Run logs what fails
	})
}
