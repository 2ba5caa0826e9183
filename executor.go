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
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/eventqueue"
	"github.com/shedlock-go/shedlock/internal/inflight"
	"github.com/shedlock-go/shedlock/internal/jobname"
)

// Executor runs tasks under locks: each run first takes the task's lock, and the
// task does not run unless it got it. It also drives cron jobs (WithLock) and
// fixed-delay loops (FixedDelay), and stops them all with Stop.
type Executor struct {
	provider       LockProvider
	log            *slog.Logger
	releaseTimeout time.Duration
	acquireTimeout time.Duration
	keepAlive      bool
	skipLevel      slog.Level
	events         *eventqueue.Queue[Event] // nil without listeners
	attempts       atomic.Uint64            // numbers runs for listeners
	err            error                    // a bad option or a nil provider: every call returns it
	maxInFlight    int                      // WithMaxInFlight; 0: the pool's size
	slotsOnce      sync.Once
	slots          *inflight.Slots // bounds statements in flight; see inFlight

	base     context.Context // ends when Stop begins, with the cause ErrStopped
	stopBase context.CancelCauseFunc

	mu      sync.Mutex
	stopped bool
	started bool
	running map[string]string   // jobname.Key -> name, for names with a Run under way here
	wonLast map[string]struct{} // jobname.Keys whose last attempt here took the lock; see inflight.WonLast
	leases  map[*lease]struct{} // tasks running: Stop ends their contexts
	names   map[string]string   // jobname.Key -> name registered by WithLock, Wrap and FixedDelay
	loops   []*fixedDelayLoop
	runs    int           // Run calls under way
	live    int           // Run calls and fixed-delay loops under way
	idle    chan struct{} // closed once stopped with nothing live

	// jobname.Key -> the cron entry Schedule added under that name; see freeRemoved
	entries map[string]cronEntry
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
		acquireTimeout: o.acquireTimeout,
		keepAlive:      o.keepAlive,
		skipLevel:      o.skipLevel,
		maxInFlight:    o.maxInFlight,
		events:         newEventQueue(o.listeners, o.logger),
		err:            err,
		running:        make(map[string]string),
		wonLast:        make(map[string]struct{}),
		leases:         make(map[*lease]struct{}),
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
// LockAtMostFor runs out (its cause is then ErrLockExpired); with keep-alive
// (WithKeepAlive) the lock is extended instead, and the context ends with a
// cause wrapping ErrLockLost if the lock is lost. The context carries the lock
// (LockFromContext, AssertLocked), and its deadline moves when the lock is
// extended. The lock is released when the task returns, fails, panics or calls
// runtime.Goexit, with a context of its own; a panic is returned as
// ErrTaskPanicked. A Goexit still ends the calling goroutine, after the release,
// and is logged at error level. After Stop, Run returns ErrStopped and runs
// nothing.
//
// When ctx carries the run's fire time (ContextWithFireTime), an attempt made
// more than half of LockAtLeastFor after it is skipped: (false, nil). The
// executor keeps its statements in flight within the provider's pool, and
// sends releases ahead of waiting attempts (WithMaxInFlight).
func (e *Executor) Run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error) (ran bool, err error) {
	return e.RunWith(ctx, cfg, task)
}

// RunWith is Run with job options, such as KeepAlive(true). A nil option is
// ErrInvalidOption.
func (e *Executor) RunWith(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, opts ...JobOption) (ran bool, err error) {
	if e.err != nil {
		return false, e.err
	}
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	if task == nil {
		return false, fmt.Errorf("%w: lock %q: nil task", ErrInvalidJob, cfg.Name)
	}
	o, err := e.jobOptions(cfg.Name, opts)
	if err != nil {
		return false, err
	}
	return e.run(ctx, cfg, task, o)
}

// errGoexit stands for the error of a task that called runtime.Goexit.
var errGoexit = errors.New("shedlock: task called runtime.Goexit")

// run is Run on a checked config and task.
func (e *Executor) run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, o jobOptions) (ran bool, err error) {
	key := jobname.Key(cfg.Name)
	entered, kind, err := e.enter(key, cfg.Name)
	if err != nil {
		return false, err
	}
	start := time.Now()
	var id RunID
	if e.events != nil {
		id = RunID{e, e.attempts.Add(1)}
		e.emit(ctx, Event{Kind: EventAttempt, Run: id, Config: cfg}, time.Time{})
	}
	if !entered {
		e.log.Log(ctx, e.skipLevel, "shedlock: skipped, still running in this process", "lock", cfg.Name)
		e.emit(ctx, Event{Kind: EventSkipped, Run: id, Config: cfg, Skip: SkipRunningHere}, start)
		return false, nil
	}
	var took, heldElsewhere bool
	defer func() { e.leave(key, took, heldElsewhere) }()

	lock, err := e.tryLock(ctx, cfg, kind)
	took, heldElsewhere = err == nil, errors.Is(err, ErrNotAcquired)
	if errors.Is(err, errLate) {
		e.log.Log(ctx, e.skipLevel, "shedlock: skipped, past its fire time's window", "lock", cfg.Name)
		e.emit(ctx, Event{Kind: EventSkipped, Run: id, Config: cfg, Skip: SkipLate}, start)
		return false, nil
	}
	if errors.Is(err, ErrNotAcquired) {
		e.log.Log(ctx, e.skipLevel, "shedlock: skipped, lock held elsewhere", "lock", cfg.Name)
		e.emit(ctx, Event{Kind: EventSkipped, Run: id, Config: cfg, Skip: SkipHeldElsewhere}, start)
		return false, nil
	}
	if err != nil {
		level := slog.LevelError
		if ctx.Err() != nil || e.base.Err() != nil {
			level = slog.LevelDebug // the caller, or Stop, gave up: not a store failure
		}
		e.log.Log(ctx, level, "shedlock: could not take lock; task not run", "lock", cfg.Name, "error", err)
		e.emit(ctx, Event{Kind: EventStoreError, Run: id, Config: cfg, Err: err}, start)
		return false, err
	}
	if e.base.Err() != nil { // Stop began while the lock was being taken
		e.emit(ctx, Event{Kind: EventAcquired, Run: id, Config: cfg,
			Until: start.Add(cfg.LockAtMostFor - leaseMargin(cfg.LockAtMostFor))}, start)
		return false, errors.Join(ErrStopped, e.release(ctx, cfg, lock, id, start))
	}

	l := e.newLease(ctx, cfg, lock, start, o.keepAlive, id)
	var taskStart time.Time
	if e.events != nil {
		taskStart = time.Now()
	}
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: the goroutine ends, the lock must not stay
			e.log.ErrorContext(ctx, "shedlock: task called runtime.Goexit; its goroutine ends, its lock is released",
				"lock", cfg.Name)
			cause := taskCause(l)
			l.finish()
			e.emit(ctx, Event{Kind: EventFinished, Run: id, Config: cfg, Err: errGoexit, Result: TaskFailed, Cause: cause}, taskStart)
			_ = e.release(ctx, cfg, lock, id, start)
		}
	}()
	panicked, taskErr := runTask(l, cfg.Name, task)
	returned = true
	cause := taskCause(l)
	l.finish()

	result := e.taskResult(ctx, taskErr, panicked)
	e.logTask(ctx, cfg.Name, taskErr, result)
	e.emit(ctx, Event{Kind: EventFinished, Run: id, Config: cfg, Err: taskErr, Result: result, Cause: cause}, taskStart)
	if relErr := e.release(ctx, cfg, lock, id, start); relErr != nil {
		return true, errors.Join(taskErr, relErr)
	}
	return true, taskErr
}

// emit hands ev, stamped now, to the listeners; from, when set, is when what ev
// reports began. Without listeners it does nothing.
func (e *Executor) emit(ctx context.Context, ev Event, from time.Time) {
	if e.events == nil {
		return
	}
	ev.Time = time.Now()
	if !from.IsZero() {
		ev.Duration = ev.Time.Sub(from)
	}
	e.events.Push(ctx, ev)
}

// taskCause is the cause of the task's context if it has ended, else nil.
func taskCause(ctx context.Context) error {
	if ctx.Err() == nil {
		return nil
	}
	return context.Cause(ctx)
}

func (e *Executor) taskResult(ctx context.Context, err error, panicked bool) TaskResult {
	switch {
	case panicked:
		return TaskPanicked
	case err == nil:
		return TaskOK
	case (errors.Is(err, context.Canceled) || errors.Is(err, ErrStopped)) && (ctx.Err() != nil || e.base.Err() != nil):
		return TaskCancelled // stopped by its caller or by Stop, as asked: not a failure
	default:
		return TaskFailed
	}
}

func (e *Executor) logTask(ctx context.Context, name string, err error, result TaskResult) {
	switch result {
	case TaskOK:
	case TaskCancelled:
		e.log.InfoContext(ctx, "shedlock: task ended on cancellation", "lock", name, "error", err)
	default:
		e.log.ErrorContext(ctx, "shedlock: task failed", "lock", name, "error", err)
	}
}

// release unlocks with a context of its own, so that a cancelled task context
// cannot keep the lock held, and logs a failure.
func (e *Executor) release(ctx context.Context, cfg LockConfig, lock Lock, id RunID, start time.Time) error {
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.releaseTimeout)
	defer cancel()
	err := e.unlock(relCtx, lock)
	if err != nil {
		e.log.ErrorContext(ctx, "shedlock: release failed; the lock stays held until its lock_until",
			"lock", cfg.Name, "error", err)
		e.emit(ctx, Event{Kind: EventReleaseFailed, Run: id, Config: cfg, Err: err}, start)
		return err
	}
	e.emit(ctx, Event{Kind: EventReleased, Run: id, Config: cfg}, start)
	return nil
}

// enter marks key as running here, and tells the kind of its attempt. It
// refuses with ErrStopped once stopped, and with no error when the name
// already runs in this process: a run that outlived its lock must not be
// joined by a second one.
func (e *Executor) enter(key, name string) (bool, inflight.Kind, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false, 0, ErrStopped
	}
	if _, ok := e.running[key]; ok {
		return false, 0, nil
	}
	e.running[key] = name
	e.runs++
	e.live++
	if _, ok := e.wonLast[key]; ok {
		return true, inflight.WonLast, nil
	}
	return true, inflight.Attempt, nil
}

// registerLocked claims name for one job, unless the executor has stopped. e.mu
// must be held.
func (e *Executor) registerLocked(name string) error {
	if e.stopped {
		return fmt.Errorf("%w: lock %q: registered after Stop", ErrStopped, name)
	}
	key := jobname.Key(name)
	if first, ok := e.names[key]; ok {
		if first == name {
			return fmt.Errorf("%w: %q", ErrDuplicateName, name)
		}
		return fmt.Errorf("%w: %q is %q to the store (names differing only by case, accents, emoji or trailing spaces are one lock)",
			ErrDuplicateName, name, first)
	}
	e.names[key] = name
	return nil
}

// addLease makes l's context end with ErrStopped on Stop, at once if Stop has
// begun. The executor keeps the set itself rather than a context.AfterFunc per
// run: a map entry costs a run nothing once the map has grown.
func (e *Executor) addLease(l *lease) {
	e.mu.Lock()
	stopped := e.stopped
	if !stopped {
		e.leases[l] = struct{}{}
	}
	e.mu.Unlock()
	if stopped {
		l.cancel(ErrStopped)
	}
}

// leaseHooks is what a run's lease may call back.
func (e *Executor) leaseHooks() leaseHooks {
	h := leaseHooks{log: e.log, finished: e.removeLease, slots: e.inFlight()}
	if e.events != nil {
		h.emit = e.emit
	}
	return h
}

func (e *Executor) removeLease(l *lease) {
	e.mu.Lock()
	delete(e.leases, l)
	e.mu.Unlock()
}

// maxWonLast bounds the names remembered as won: an application that locks a
// name per entity (one per order) would otherwise grow the set for good.
const maxWonLast = 1 << 14

// leave ends key's run here. An attempt that took the lock makes the next one
// a WonLast; one that found it held elsewhere, an Attempt; any other outcome
// (late, a store error) leaves it as it was.
func (e *Executor) leave(key string, took, heldElsewhere bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case took:
		if len(e.wonLast) >= maxWonLast {
			clear(e.wonLast)
		}
		e.wonLast[key] = struct{}{}
	case heldElsewhere:
		delete(e.wonLast, key)
	}
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

// runTask runs task on the lease, turning a panic into ErrTaskPanicked.
func runTask(ctx context.Context, name string, task func(context.Context) error) (panicked bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			panicked, err = true, fmt.Errorf("%w: lock %q: %v\n%s", ErrTaskPanicked, name, r, debug.Stack())
		}
	}()
	return false, task(ctx)
}

// Stop ends the executor: no run starts after it, fixed-delay loops end, running
// tasks' contexts are cancelled with the cause ErrStopped, and Stop waits for
// them to return and release their locks. If ctx ends first, Stop returns an
// error wrapping ctx's error that names the tasks still running; with nothing
// running it returns nil whatever ctx's state. If fixed-delay jobs were
// registered but Start was never called, the error also wraps ErrNotStarted.
//
// With listeners (WithListener), Stop also waits, within ctx, until they have
// received every event of the runs it waited for; events still queued when ctx
// ends are delivered in the background.
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
	leases := make([]*lease, 0, len(e.leases))
	for l := range e.leases {
		leases = append(leases, l)
	}
	e.mu.Unlock()
	e.stopBase(ErrStopped)
	for _, l := range leases {
		l.cancel(ErrStopped)
	}

	select {
	case <-e.idle:
		e.events.Wait(ctx)
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
