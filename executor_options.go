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
}

func defaultExecutorOptions() executorOptions {
	return executorOptions{logger: slog.Default(), releaseTimeout: 10 * time.Second}
}

// WithExecutorLogger sets where the executor logs task errors, panics, store
// failures (error level) and skipped runs (debug level). Default: slog.Default().
// A nil logger is an invalid option.
func WithExecutorLogger(l *slog.Logger) ExecutorOption {
	return func(o *executorOptions) { o.logger = l }
}

// WithReleaseTimeout bounds how long releasing a lock after a task may take,
// retries included. Default 10s; it must be > 0.
func WithReleaseTimeout(d time.Duration) ExecutorOption {
	return func(o *executorOptions) { o.releaseTimeout = d }
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
	}
	return o, nil
}
