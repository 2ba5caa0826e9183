package shedlock

import (
	"fmt"
	"log/slog"
	"time"
)

// ExecutorOption configures an Executor. It reports a bad value as an error
// wrapping ErrInvalidOption, which every call on the executor then returns
// (see [NewExecutor]).
type ExecutorOption func(*executorOptions) error

type executorOptions struct {
	logger         *slog.Logger
	releaseTimeout time.Duration
	acquireTimeout time.Duration
	keepAlive      bool
	listeners      []Listener
	skipLevel      slog.Level
	maxInFlight    int
}

func defaultExecutorOptions() executorOptions {
	return executorOptions{logger: slog.Default(), releaseTimeout: 10 * time.Second, acquireTimeout: 10 * time.Second, skipLevel: slog.LevelDebug}
}

// WithExecutorLogger sets where the executor logs task errors, panics, store
// failures (error level) and skipped runs (debug level, see WithSkipLogLevel).
// Default: slog.Default(). A nil logger is an invalid option.
func WithExecutorLogger(l *slog.Logger) ExecutorOption {
	return func(o *executorOptions) error {
		if l == nil {
			return fmt.Errorf("%w: WithExecutorLogger: nil logger", ErrInvalidOption)
		}
		o.logger = l
		return nil
	}
}

// WithReleaseTimeout bounds how long releasing a lock after a task may take,
// retries included. Default 10s; it must be > 0.
func WithReleaseTimeout(d time.Duration) ExecutorOption {
	return func(o *executorOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithReleaseTimeout(%v): must be > 0", ErrInvalidOption, d)
		}
		o.releaseTimeout = d
		return nil
	}
}

// WithAcquireTimeout bounds how long taking a lock before a run may take.
// Default 10s; it must be > 0. A store that does not answer in time is a store
// error: the task does not run, and Run returns the error. A caller's context
// with an earlier deadline ends the attempt sooner. The bound is each
// attempt's own, from when Run is called, also when it waits for a slot or
// goes in a batch with others (WithMaxInFlight): it then leaves the batch at
// its own deadline, and a lock the batch takes for it after is released.
func WithAcquireTimeout(d time.Duration) ExecutorOption {
	return func(o *executorOptions) error {
		if d <= 0 {
			return fmt.Errorf("%w: WithAcquireTimeout(%v): must be > 0", ErrInvalidOption, d)
		}
		o.acquireTimeout = d
		return nil
	}
}

// WithKeepAlive extends every job's lock while its task runs, so that a task may
// outlive its LockAtMostFor without another instance taking the lock. The job
// option KeepAlive turns it on or off for one job.
//
// Every third of LockAtMostFor the lock is extended by the job's own
// LockAtMostFor (one statement, as the stores' Extend), and the task's context
// deadline moves with it. A failed Extend is retried while the lock has time
// left; when an Extend is refused (the lock was taken away) or no Extend
// succeeds before the lock's time runs out, the task's context ends with a cause
// wrapping ErrLockLost, a margin before another instance could take the lock (a
// lock taken away behind its back is found only at the next extension). A
// process that dies stops extending: its lock is free LockAtMostFor after the
// last extension, as without keep-alive. Keep LockAtMostFor short enough for
// that wait, long enough for a few round trips to the store: with keep-alive a
// few seconds will do.
func WithKeepAlive() ExecutorOption {
	return func(o *executorOptions) error {
		o.keepAlive = true
		return nil
	}
}

// WithListener adds a listener that receives every event of the executor's
// locks (see Listener). Listeners are called in the order they were added. A nil
// listener is an invalid option.
func WithListener(l Listener) ExecutorOption {
	return func(o *executorOptions) error {
		if l == nil {
			return fmt.Errorf("%w: WithListener: nil listener", ErrInvalidOption)
		}
		o.listeners = append(o.listeners, l)
		return nil
	}
}

// WithSkipLogLevel sets the level at which runs skipped because the lock is held
// (elsewhere, or still here) are logged. Default slog.LevelDebug: in a service of
// many replicas every tick but one is skipped.
func WithSkipLogLevel(level slog.Level) ExecutorOption {
	return func(o *executorOptions) error {
		o.skipLevel = level
		return nil
	}
}

// newExecutorOptions applies opts to the defaults and reports the first nil or
// bad one.
func newExecutorOptions(opts []ExecutorOption) (executorOptions, error) {
	o := defaultExecutorOptions()
	if err := applyOptions("NewExecutor", &o, opts); err != nil {
		return defaultExecutorOptions(), err
	}
	return o, nil
}
