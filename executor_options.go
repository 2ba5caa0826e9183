package shedlock

import (
	"fmt"
	"log/slog"
	"time"
)

// ExecutorOption configures an Executor. A bad value is reported as
// ErrInvalidOption by every call on the executor (see [NewExecutor]).
type ExecutorOption func(*executorOptions)

type executorOptions struct {
	logger         *slog.Logger
	releaseTimeout time.Duration
	keepAlive      bool
	listeners      []Listener
	nilListener    bool
	skipLevel      slog.Level
}

func defaultExecutorOptions() executorOptions {
	return executorOptions{logger: slog.Default(), releaseTimeout: 10 * time.Second, skipLevel: slog.LevelDebug}
}

// WithExecutorLogger sets where the executor logs task errors, panics, store
// failures (error level) and skipped runs (debug level, see WithSkipLogLevel).
// Default: slog.Default(). A nil logger is an invalid option.
func WithExecutorLogger(l *slog.Logger) ExecutorOption {
	return func(o *executorOptions) { o.logger = l }
}

// WithReleaseTimeout bounds how long releasing a lock after a task may take,
// retries included. Default 10s; it must be > 0.
func WithReleaseTimeout(d time.Duration) ExecutorOption {
	return func(o *executorOptions) { o.releaseTimeout = d }
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
// wrapping ErrLockLost, a margin before another instance could take the lock. A
// process that dies stops extending: its lock is free LockAtMostFor after the
// last extension, as without keep-alive. Keep LockAtMostFor short enough for
// that wait, long enough for a few round trips to the store: with keep-alive a
// few seconds will do.
func WithKeepAlive() ExecutorOption {
	return func(o *executorOptions) { o.keepAlive = true }
}

// WithListener adds a listener that receives every event of the executor's
// locks (see Listener). Listeners are called in the order they were added. A nil
// listener is an invalid option.
func WithListener(l Listener) ExecutorOption {
	return func(o *executorOptions) {
		if l == nil {
			o.nilListener = true
			return
		}
		o.listeners = append(o.listeners, l)
	}
}

// WithSkipLogLevel sets the level at which runs skipped because the lock is held
// (elsewhere, or still here) are logged. Default slog.LevelDebug: in a service of
// many replicas every tick but one is skipped.
func WithSkipLogLevel(level slog.Level) ExecutorOption {
	return func(o *executorOptions) { o.skipLevel = level }
}

// newExecutorOptions applies opts to the defaults and reports the first bad value.
func newExecutorOptions(opts []ExecutorOption) (executorOptions, error) {
	o := defaultExecutorOptions()
	for i, opt := range opts {
		if opt == nil {
			return defaultExecutorOptions(), fmt.Errorf("%w: NewExecutor: option %d is nil", ErrInvalidOption, i)
		}
		opt(&o)
	}
	switch {
	case o.logger == nil:
		return defaultExecutorOptions(), fmt.Errorf("%w: WithExecutorLogger: nil logger", ErrInvalidOption)
	case o.releaseTimeout <= 0:
		return defaultExecutorOptions(), fmt.Errorf("%w: WithReleaseTimeout(%v): must be > 0", ErrInvalidOption, o.releaseTimeout)
	case o.nilListener:
		return defaultExecutorOptions(), fmt.Errorf("%w: WithListener: nil listener", ErrInvalidOption)
	}
	return o, nil
}
