package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

var (
	// ErrStopped is returned by Run, Wrap and FixedDelay after Executor.Stop, and
	// is the cause of a task context that Stop ended.
	ErrStopped = errors.New("shedlock: executor stopped")
	// ErrDuplicateName is returned when a second job is registered under a lock
	// name that one executor already runs: the two would block each other. Names
	// differing only by case or trailing spaces are one name, as the store's
	// collation makes them one row.
	ErrDuplicateName = errors.New("shedlock: lock name already registered on this executor")
	// ErrInvalidJob is returned for a job the executor cannot run as given: a nil
	// task or cron job, or a fixed delay that is not > 0.
	ErrInvalidJob = errors.New("shedlock: invalid job")
	// ErrNotStarted is returned by Stop when fixed-delay jobs were registered but
	// Start was never called: they never ran.
	ErrNotStarted = errors.New("shedlock: executor never started")
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
	err            error // a bad option or a nil provider: every call returns it

	base     context.Context // ends when Stop begins, with the cause ErrStopped
	stopBase context.CancelCauseFunc

	mu      sync.Mutex
	stopped bool
	started bool
	running map[string]string // storeKey -> name, for names with a Run under way here
	names   map[string]string // storeKey -> name registered by WithLock, Wrap and FixedDelay
	loops   []*fixedDelayLoop
	runs    int           // Run calls under way
	live    int           // Run calls and fixed-delay loops under way
	idle    chan struct{} // closed once stopped with nothing live
}

// NewExecutor returns an executor that takes its locks from p.
//
// A nil p or an invalid option does not fail here (the signature has no error):
// the executor keeps the first such problem, wrapped in ErrInvalidOption, and Run,
// Wrap and FixedDelay return it while WithLock panics with it, so the mistake
// surfaces at the first registration, before any job could run.
func NewExecutor(p LockProvider, opts ...ExecutorOption) *Executor {
	o, err := newExecutorOptions(opts)
	if err == nil && p == nil {
		err = fmt.Errorf("%w: NewExecutor: nil LockProvider", ErrInvalidOption)
	}
	e := &Executor{
		provider:       p,
		log:            o.logger,
		releaseTimeout: o.releaseTimeout,
		err:            err,
		running:        make(map[string]string),
		names:          make(map[string]string),
		idle:           make(chan struct{}),
	}
	e.base, e.stopBase = context.WithCancelCause(context.Background())
	return e
}

// Run runs task only if the lock is acquired; ran reports whether it ran.
//
// Another instance holding the lock, or this process still running the same
// name, is not an error: Run returns (false, nil). A store failure returns the
// error and the task does not run. The task's context ends when ctx does, when
// Stop is called (its cause is then ErrStopped), and shortly before the lock's
// LockAtMostFor runs out (its cause is then ErrLockExpired). The lock is released
// when the task returns, fails, panics or calls runtime.Goexit, with a context of
// its own; a panic is returned as ErrTaskPanicked. A Goexit still ends the
// calling goroutine, after the release, and is logged at error level. After Stop,
// Run returns ErrStopped and runs nothing.
func (e *Executor) Run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error) (ran bool, err error) {
	if e.err != nil {
		return false, e.err
	}
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	if task == nil {
		return false, fmt.Errorf("%w: lock %q: nil task", ErrInvalidJob, cfg.Name)
	}
	key := storeKey(cfg.Name)
	if entered, err := e.enter(key, cfg.Name); !entered {
		if err == nil {
			e.log.DebugContext(ctx, "shedlock: skipped, still running in this process", "lock", cfg.Name)
		}
		return false, err
	}
	defer e.leave(key)

	start := time.Now()
	lock, err := e.provider.TryLock(ctx, cfg)
	if errors.Is(err, ErrNotAcquired) {
		e.log.DebugContext(ctx, "shedlock: skipped, lock held elsewhere", "lock", cfg.Name)
		return false, nil
	}
	if err != nil {
		level := slog.LevelError
		if ctx.Err() != nil || e.base.Err() != nil {
			level = slog.LevelDebug // the caller, or Stop, gave up: not a store failure
		}
		e.log.Log(ctx, level, "shedlock: could not take lock; task not run", "lock", cfg.Name, "error", err)
		return false, err
	}
	if e.base.Err() != nil { // Stop began while the lock was being taken
		return false, errors.Join(ErrStopped, e.release(ctx, cfg.Name, lock))
	}

	returned := false
	defer func() {
		if !returned { // runtime.Goexit: the goroutine ends, the lock must not stay
			e.log.ErrorContext(ctx, "shedlock: task called runtime.Goexit; its goroutine ends, its lock is released",
				"lock", cfg.Name)
			_ = e.release(ctx, cfg.Name, lock)
		}
	}()
	taskErr := e.runTask(ctx, cfg, start, task)
	returned = true

	e.logTaskErr(ctx, cfg.Name, taskErr)
	if relErr := e.release(ctx, cfg.Name, lock); relErr != nil {
		return true, errors.Join(taskErr, relErr)
	}
	return true, taskErr
}

func (e *Executor) logTaskErr(ctx context.Context, name string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, context.Canceled) && (ctx.Err() != nil || e.base.Err() != nil):
		// Stopped by its caller or by Stop, as asked: not a failure.
		e.log.InfoContext(ctx, "shedlock: task ended on cancellation", "lock", name, "error", err)
	default:
		e.log.ErrorContext(ctx, "shedlock: task failed", "lock", name, "error", err)
	}
}

// release unlocks with a context of its own, so that a cancelled task context
// cannot keep the lock held, and logs a failure.
func (e *Executor) release(ctx context.Context, name string, lock Lock) error {
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.releaseTimeout)
	defer cancel()
	err := lock.Unlock(relCtx)
	if err != nil {
		e.log.ErrorContext(ctx, "shedlock: release failed; the lock stays held until its lock_until",
			"lock", name, "error", err)
	}
	return err
}

// enter marks key as running here. It refuses with ErrStopped once stopped, and
// with no error when the name already runs in this process: a run that outlived
// its lock must not be joined by a second one.
func (e *Executor) enter(key, name string) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false, ErrStopped
	}
	if _, ok := e.running[key]; ok {
		return false, nil
	}
	e.running[key] = name
	e.runs++
	e.live++
	return true, nil
}

func (e *Executor) leave(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, key)
	e.runs--
	e.endLiveLocked()
}

// endLiveLocked counts down a Run or a loop; the last one after Stop wakes Stop.
func (e *Executor) endLiveLocked() {
	e.live--
	if e.stopped && e.live == 0 {
		close(e.idle)
	}
}

func (e *Executor) runTask(ctx context.Context, cfg LockConfig, start time.Time, task func(context.Context) error) (err error) {
	// The context ends a little before the lock may expire, so the task can stop
	// before another instance may take the lock.
	margin := min(cfg.LockAtMostFor/10, 5*time.Second)
	// start was read before TryLock sent its statement, so the store computed
	// lock_until from a later now: this deadline is never past lock_until.
	deadlineCtx, cancelDeadline := context.WithDeadlineCause(ctx, start.Add(cfg.LockAtMostFor-margin), ErrLockExpired)
	defer cancelDeadline()
	taskCtx, cancel := context.WithCancelCause(deadlineCtx)
	defer cancel(nil)
	stop := context.AfterFunc(e.base, func() { cancel(ErrStopped) })
	defer stop()

	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: lock %q: %v\n%s", ErrTaskPanicked, cfg.Name, r, debug.Stack())
		}
	}()
	return task(taskCtx)
}

// Stop ends the executor: no run starts after it, fixed-delay loops end, running
// tasks' contexts are cancelled with the cause ErrStopped, and Stop waits for
// them to return and release their locks. If ctx ends first, Stop returns an
// error wrapping ctx's error that names the tasks still running; with nothing
// running it returns nil whatever ctx's state. If fixed-delay jobs were
// registered but Start was never called, the error also wraps ErrNotStarted.
//
// Call it before waiting for a cron scheduler's running jobs
// (cron.Cron.Stop().Done()): Stop is what cancels them.
func (e *Executor) Stop(ctx context.Context) error {
	e.mu.Lock()
	if !e.stopped {
		e.stopped = true
		if e.live == 0 {
			close(e.idle)
		}
	}
	notStarted := e.notStartedLocked()
	e.mu.Unlock()
	e.stopBase(ErrStopped)

	select {
	case <-e.idle:
		return notStarted
	case <-ctx.Done():
	}
	e.mu.Lock()
	runs := e.runs
	names := make([]string, 0, len(e.running))
	for _, name := range e.running {
		names = append(names, fmt.Sprintf("%q", name))
	}
	e.mu.Unlock()
	if runs == 0 {
		// What is left are loops between runs: they end at once, running nothing.
		<-e.idle
		return notStarted
	}
	slices.Sort(names)
	return errors.Join(notStarted, fmt.Errorf("shedlock: stop: %d tasks still running (%s): %w",
		runs, strings.Join(names, ", "), ctx.Err()))
}

// notStartedLocked reports fixed-delay jobs that never ran because Start was
// never called. e.mu must be held.
func (e *Executor) notStartedLocked() error {
	if e.started || len(e.loops) == 0 {
		return nil
	}
	names := make([]string, len(e.loops))
	for i, l := range e.loops {
		names[i] = l.cfg.Name
	}
	return fmt.Errorf("%w: fixed-delay jobs %q never ran: call Start after registering them", ErrNotStarted, names)
}
