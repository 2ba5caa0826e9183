package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

var (
	// ErrStopped is returned by Run after Executor.Stop.
	ErrStopped = errors.New("shedlock: executor stopped")
	// ErrDuplicateName is returned when a second job is registered under a lock
	// name that one executor already runs: the two would block each other.
	ErrDuplicateName = errors.New("shedlock: lock name already registered on this executor")
	// ErrTaskPanicked wraps a panic recovered from a task, with its value and stack.
	ErrTaskPanicked = errors.New("shedlock: task panicked")
	// ErrLockExpired is the cause of a task context ended because the lock's
	// LockAtMostFor is running out: past it another instance may take the lock.
	ErrLockExpired = errors.New("shedlock: lock's LockAtMostFor ran out")
)

// Executor runs tasks under locks: each run first takes the task's lock, and the
// task does not run unless it got it. It also drives cron jobs (WithLock) and
// fixed-delay loops (FixedDelay), and stops them all with Stop.
type Executor struct {
	provider       LockProvider
	log            *slog.Logger
	releaseTimeout time.Duration
	margin         time.Duration // < 0: a tenth of LockAtMostFor, at most 5s

	base     context.Context // ends when Stop begins
	stopBase context.CancelFunc

	mu       sync.Mutex
	stopped  bool
	running  map[string]bool // lock names with a task running in this process
	names    map[string]bool // names registered by WithLock, Wrap and FixedDelay
	loops    []*fixedDelayLoop
	started  bool
	inflight sync.WaitGroup // Run calls and loops
}

// ExecutorOption configures an Executor.
type ExecutorOption func(*Executor)

// WithExecutorLogger sets where the executor logs task errors, panics, store
// failures (error level) and skipped runs (debug level). Default: slog.Default().
func WithExecutorLogger(l *slog.Logger) ExecutorOption {
	return func(e *Executor) {
		if l != nil {
			e.log = l
		}
	}
}

// WithReleaseTimeout bounds how long releasing a lock after a task may take,
// retries included. Default 10s.
func WithReleaseTimeout(d time.Duration) ExecutorOption {
	return func(e *Executor) {
		if d > 0 {
			e.releaseTimeout = d
		}
	}
}

// WithExpiryMargin sets how long before LockAtMostFor runs out a task's context
// ends, so the task can stop before another instance may take the lock. Default:
// a tenth of LockAtMostFor, at most 5s. A margin of LockAtMostFor or more is
// replaced by the default.
func WithExpiryMargin(d time.Duration) ExecutorOption {
	return func(e *Executor) {
		if d >= 0 {
			e.margin = d
		}
	}
}

// NewExecutor returns an executor that takes its locks from p.
func NewExecutor(p LockProvider, opts ...ExecutorOption) *Executor {
	e := &Executor{
		provider:       p,
		log:            slog.Default(),
		releaseTimeout: 10 * time.Second,
		margin:         -1,
		running:        make(map[string]bool),
		names:          make(map[string]bool),
	}
	for _, opt := range opts {
		opt(e)
	}
	e.base, e.stopBase = context.WithCancel(context.Background())
	return e
}

// Run runs task only if the lock is acquired; ran reports whether it ran.
//
// Another instance holding the lock, or this process still running the same
// name, is not an error: Run returns (false, nil). A store failure returns the
// error and the task does not run. The task's context ends when ctx does, when
// Stop is called, and shortly before the lock's LockAtMostFor runs out (its cause
// is then ErrLockExpired). The lock is released when the task returns, fails or
// panics, with a context of its own; a panic is returned as ErrTaskPanicked.
func (e *Executor) Run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error) (ran bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	if e.provider == nil || task == nil {
		return false, fmt.Errorf("%w: lock %q: nil provider or task", ErrInvalidOption, cfg.Name)
	}
	if !e.enter(cfg.Name) {
		return false, e.skipped(ctx, cfg.Name)
	}
	defer e.leave(cfg.Name)

	start := time.Now()
	lock, err := e.provider.TryLock(ctx, cfg)
	if errors.Is(err, ErrNotAcquired) {
		e.log.DebugContext(ctx, "shedlock: skipped, lock held elsewhere", "lock", cfg.Name)
		return false, nil
	}
	if err != nil {
		level := slog.LevelError
		if ctx.Err() != nil {
			level = slog.LevelDebug // the caller, or Stop, gave up: not a store failure
		}
		e.log.Log(ctx, level, "shedlock: could not take lock; task not run", "lock", cfg.Name, "error", err)
		return false, err
	}

	taskErr := e.runTask(ctx, cfg, start, task)
	if taskErr != nil {
		level := slog.LevelError
		if errors.Is(taskErr, context.Canceled) && (ctx.Err() != nil || e.base.Err() != nil) {
			level = slog.LevelInfo // stopped by its caller or by Stop, as asked
		}
		e.log.Log(ctx, level, "shedlock: task failed", "lock", cfg.Name, "error", taskErr)
	}
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.releaseTimeout)
	defer cancel()
	if relErr := lock.Unlock(relCtx); relErr != nil {
		e.log.ErrorContext(ctx, "shedlock: release failed; the lock stays held until its lock_until",
			"lock", cfg.Name, "error", relErr)
		return true, errors.Join(taskErr, relErr)
	}
	return true, taskErr
}

// enter marks name as running here; false when the executor is stopped or the
// name already runs in this process (a run that outlived its lock must not be
// joined by a second one).
func (e *Executor) enter(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || e.running[name] {
		return false
	}
	e.running[name] = true
	e.inflight.Add(1)
	return true
}

func (e *Executor) leave(name string) {
	e.mu.Lock()
	delete(e.running, name)
	e.mu.Unlock()
	e.inflight.Done()
}

func (e *Executor) skipped(ctx context.Context, name string) error {
	e.mu.Lock()
	stopped := e.stopped
	e.mu.Unlock()
	if stopped {
		return ErrStopped
	}
	e.log.DebugContext(ctx, "shedlock: skipped, still running in this process", "lock", name)
	return nil
}

func (e *Executor) runTask(ctx context.Context, cfg LockConfig, start time.Time, task func(context.Context) error) (err error) {
	margin := e.margin
	if margin < 0 || margin >= cfg.LockAtMostFor {
		margin = min(cfg.LockAtMostFor/10, 5*time.Second)
	}
	// start was read before TryLock sent its statement, so the store computed
	// lock_until from a later now: this deadline is never past lock_until.
	taskCtx, cancel := context.WithDeadlineCause(ctx, start.Add(cfg.LockAtMostFor-margin), ErrLockExpired)
	defer cancel()
	stop := context.AfterFunc(e.base, cancel)
	defer stop()

	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: lock %q: %v\n%s", ErrTaskPanicked, cfg.Name, r, debug.Stack())
		}
	}()
	return task(taskCtx)
}

// Stop ends the executor: no run starts after it, fixed-delay loops end, running
// tasks' contexts are cancelled, and Stop waits for them to return and release
// their locks, or for ctx to end (then it returns ctx's error).
func (e *Executor) Stop(ctx context.Context) error {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.stopBase()
	done := make(chan struct{})
	go func() {
		e.inflight.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shedlock: stop: tasks still running: %w", ctx.Err())
	}
}
