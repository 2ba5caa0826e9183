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
	runNowEvery    time.Duration
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

// WithMaxInFlight bounds the executor's statements in flight at once to n. By
// default n is the provider's pool size (PoolSizer), read at the first
// attempt, or 8 when it has none. Attempts, in batches, alone or for a
// CatchUp run's fire time, use at most n-1 of them (1 when n is 1), so that
// one connection stays free for releases and extensions, which
// never wait for attempts: a lock this instance holds is kept and freed in one
// statement's time, even while every attempt hangs on rows another
// transaction holds; they go before waiting attempts when a statement ends,
// and keep to the bound of n too, so that a herd's winners releasing at once do
// not open a connection each. With n = 1, one attempt and one release or
// extension may be in flight. n must be >= 1.
//
// The bound cannot give the pool a connection it does not have: with a pool
// of one connection (db.SetMaxOpenConns(1)), an attempt hung on a row keeps
// it, and a release or an extension waits for it, up to the acquire timeout.
// The executor warns of such a pool at construction and at its first
// attempt: give it at least 2 connections.
//
// Attempts beyond the bound wait, and go together: when one ends, the next
// takes the queue with it, up to 64 attempts, in one batch statement where
// the provider can (BatchLocker), else one at a time. Attempts on names whose
// last attempt here took the lock go first, then the others, each instance
// going round the names from a place of its own, so that at a tick the
// instances' first batches are mostly different jobs; the others do not wait
// for won-last attempts in flight while a slot is free. An attempt that finds
// a slot free and no queue goes at once, alone. Each attempt in a batch keeps
// its own acquire timeout (WithAcquireTimeout).
//
// Size it as the pool: with N pods each firing M jobs at one tick, each pod
// opens at most n connections, and the store sees about N×M/64 batch
// statements rather than N×M; the store must allow N×n connections besides
// its other clients. An executor bounds only its own statements: tasks that
// use the same pool, and other executors on it, add to it.
func WithMaxInFlight(n int) ExecutorOption {
	return func(o *executorOptions) error {
		if n < 1 {
			return fmt.Errorf("%w: WithMaxInFlight(%d): must be >= 1", ErrInvalidOption, n)
		}
		o.maxInFlight = n
		return nil
	}
}

// WithRunNowCheck makes the executor ask its store every d which of its jobs
// an operator asked to run now (Controller.RunNow), in one statement for all
// of them, and run each such job once, under its lock, as at a fire time: the
// first instance to check runs it, and marks the request run once the task
// has returned, still holding the lock, so that a request whose run died (a
// pod killed mid-run) or was cancelled by Stop is run by the next check
// anywhere. A task that failed or panicked had its run: it is not run again
// until asked again. A paused job's request waits for Resume, and so does one
// of a job whose lock is held: by a run elsewhere, or, for a Schedule'd job, by
// its last fire time's hold, which lasts until just before its next fire time
// (so that no instance runs that fire time again): the request then runs when
// the hold ends. The provider must keep requests
// (RunRequester: the SQL providers, shedlockredis, shedlocketcd); with one
// that does not, the option does nothing. Default: off, no statement. d must
// be at least 10 ms.
func WithRunNowCheck(d time.Duration) ExecutorOption {
	return func(o *executorOptions) error {
		if d < 10*time.Millisecond {
			return fmt.Errorf("%w: WithRunNowCheck(%v): must be at least 10ms", ErrInvalidOption, d)
		}
		o.runNowEvery = d
		return nil
	}
}
