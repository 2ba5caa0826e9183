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
	e.runnable(cfg, task, o)
	return cron.FuncJob(func() {
		// cron calls the job at its fire time: an attempt that waits past
		// the window of that fire time gives up (see ContextWithFireTime).
		_, _ = e.run(ContextWithFireTime(e.base, time.Now()), cfg, task, o) // run logs what fails
	})
}

// jobOptions applies opts to the executor's defaults.
func (e *Executor) jobOptions(name string, opts []JobOption) (jobOptions, error) {
	if len(opts) == 0 { // every Run: no message to format, and no options on the heap
		return jobOptions{keepAlive: e.keepAlive}, nil
	}
	o := jobOptions{keepAlive: e.keepAlive}
	err := applyOptions(fmt.Sprintf("lock %q: job", name), &o, opts)
	return o, err
}

// plainJobOptions is jobOptions for a job whose fire times the executor does
// not know (what: Run, FixedDelay or Wrap), which CatchUp needs.
func (e *Executor) plainJobOptions(name, what string, opts []JobOption) (jobOptions, error) {
	o, err := e.jobOptions(name, opts)
	if err == nil && o.catchUp > 0 {
		err = fmt.Errorf("%w: lock %q: CatchUp needs the job's cron spec, which %s is not given: "+
			"add the job with Schedule", ErrInvalidOption, name, what)
	}
	return o, err
}

// FixedDelay registers a task to run under cfg's lock in a loop: run, wait delay
// after it finishes (or after the lock was found taken), run again. This is
// Spring's fixedDelay, which robfig/cron lacks. Loops start with Start, or at once
// if the executor has started; they end with Stop. If Start is never called the
// task never runs: a warning is logged once when loops registered a minute ago
// have still not started, and Stop returns ErrNotStarted.
//
// It returns ErrInvalidConfig for a config that fails Validate or that the
// provider would refuse on every run (see ConfigChecker), ErrInvalidJob for a nil
// task or a delay that is not > 0, ErrDuplicateName for a name already registered
// on this executor (names differing only by case, accents, emoji or trailing spaces are one
// name), and ErrStopped after Stop.
//
// Job options (KeepAlive) apply to every run; a nil one is ErrInvalidOption.
//
// Each run has a goroutine of its own, as each cron run does: a task that calls
// runtime.Goexit ends that run (its lock is released and the Goexit logged), and
// the loop goes on.
func (e *Executor) FixedDelay(cfg LockConfig, delay time.Duration, task func(ctx context.Context) error, opts ...JobOption) error {
	storeKey, err := e.checkJob(cfg)
	if err != nil {
		return err
	}
	o, err := e.plainJobOptions(cfg.Name, "FixedDelay", opts)
	if err != nil {
		return err
	}
	if task == nil {
		return fmt.Errorf("%w: lock %q: FixedDelay: nil task", ErrInvalidJob, cfg.Name)
	}
	if delay <= 0 {
		return fmt.Errorf("%w: lock %q: FixedDelay needs a delay > 0, got %v", ErrInvalidJob, cfg.Name, delay)
	}
	l := &fixedDelayLoop{cfg: cfg, delay: delay, task: task, opts: o}
	if err := e.reg.register(cfg.Name, storeKey); err != nil {
		return err
	}
	if err := e.delays.add(l, e.startLoop, e.notStartedAfter); err != nil {
		e.reg.unregister(cfg.Name) // Stop came after the name was registered
		return err
	}
	e.reg.recordLoop(cfg.Name, l)
	e.runnable(cfg, task, o)
	return nil
}

// Start starts the registered fixed-delay loops, each running its task at once.
// Calling it again, or after Stop, does nothing.
func (e *Executor) Start() { e.delays.startAll(e.startLoop) }

// checkJob reports why a job under cfg cannot be registered: a bad executor or
// a config the provider would refuse; else it returns the provider's NameKey
// of the name (see storeKey).
func (e *Executor) checkJob(cfg LockConfig) (string, error) {
	if e.err != nil {
		return "", e.err
	}
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if c, ok := e.provider.(ConfigChecker); ok {
		if err := c.CheckConfig(cfg); err != nil {
			return "", err
		}
	}
	return e.reg.storeKey(e.provider, e.attempts.timeout, e.log, cfg.Name)
}

// startLoop starts l's loop, unless the executor has stopped.
func (e *Executor) startLoop(l *fixedDelayLoop) {
	if !e.beginLive() {
		return
	}
	go func() {
		defer e.endLive()
		for {
			l.next.Store(time.Now().UnixNano())
			e.runOnce(l)
			l.next.Store(time.Now().Add(l.delay).UnixNano())
			t := time.NewTimer(l.delay)
			select {
			case <-e.base.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// runOnce runs l's task once, in a goroutine of its own so that a runtime.Goexit
// in the task ends only that run.
func (e *Executor) runOnce(l *fixedDelayLoop) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.run(e.base, l.cfg, l.task, l.opts) // run logs what fails
	}()
	<-done
}

// runnable makes a registered job run on run-now requests, once the executor
// checks for them (WithRunNowCheck): the first such job starts the check.
func (e *Executor) runnable(cfg LockConfig, task func(context.Context) error, o jobOptions) {
	rr, ok := e.provider.(RunRequester)
	if !ok || e.runNowEvery == 0 {
		return
	}
	e.reg.recordRunner(cfg.Name, runner{cfg: cfg, task: task, o: o})
	if e.runNowChecks.Swap(true) || !e.beginLive() {
		return
	}
	go func() {
		defer e.endLive()
		e.checkRunNow(rr)
	}()
}

// checkRunNow asks the store every runNowEvery for the run-now requests of
// the registered jobs, and runs each job asked for once, until Stop.
func (e *Executor) checkRunNow(rr RunRequester) {
	t := time.NewTicker(e.runNowEvery)
	defer t.Stop()
	for {
		select {
		case <-e.base.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(e.base, e.attempts.timeout)
		due, err := e.reg.requested(ctx, rr)
		cancel()
		if err != nil {
			if e.base.Err() == nil {
				e.log.Warn("shedlock: could not ask the store for run-now requests; asking again at the next check", "error", err)
			}
			continue
		}
		for _, r := range due {
			go func() { _, _ = e.runFire(e.base, r.cfg, r.task, r.o, nil, rr) }() // run logs what fails
		}
	}
}
