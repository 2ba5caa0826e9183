package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock/internal/eventqueue"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Executor runs tasks under locks: each run first takes the task's lock, and the
// task does not run unless it got it. It also drives cron jobs (WithLock) and
// fixed-delay loops (FixedDelay), and stops them all with Stop.
type Executor struct {
	provider       LockProvider
	log            *slog.Logger
	releaseTimeout time.Duration
	keepAlive      bool
	skipLevel      slog.Level
	events         *eventqueue.Queue[Event] // nil without listeners
	seq            *runSeq                  // numbers runs for listeners
	err            error                    // a bad option or a nil provider: every call returns it
	attempts       *attempts                // sends the attempts, within the bound
	hooks          *holdHooks               // what every run's hold calls back

	base     context.Context // ends when Stop begins, with the cause ErrStopped
	stopBase context.CancelCauseFunc

	reg  *registry // the job names registered
	here *runsHere // the runs under way here

	mu              sync.Mutex
	stopped         bool
	started         bool
	loops           []*fixedDelayLoop
	notStarted      *time.Timer // warns once of loops not started within notStartedAfter; nil until the first
	notStartedAfter time.Duration
	live            int           // runs and loops under way
	idle            chan struct{} // closed once stopped with nothing live
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
		keepAlive:      o.keepAlive,
		skipLevel:      o.skipLevel,
		attempts:       &attempts{provider: p, timeout: o.acquireTimeout, maxInFlight: o.maxInFlight, log: o.logger},
		events:         newEventQueue(o.listeners, o.logger),
		err:            err,
		seq:            new(runSeq),
		reg:            newRegistry(),
		here:           newRunsHere(),
		idle:           make(chan struct{}),

		notStartedAfter: notStartedWarnAfter,
	}
	e.base, e.stopBase = context.WithCancelCause(context.Background())
	e.hooks = e.holdHooks()
	e.attempts.warnPoolOfOne()
	return e
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

// beginLive counts a run or a loop that starts now, unless the executor has
// stopped (false).
func (e *Executor) beginLive() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	e.live++
	return true
}

// endLive counts down a run or a loop; the last one after Stop wakes Stop.
func (e *Executor) endLive() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.live--
	if e.stopped && e.live == 0 {
		close(e.idle)
	}
}

// Stop ends the executor: no run starts after it, fixed-delay loops end, running
// tasks' contexts are cancelled with the cause ErrStopped, and Stop waits for
// them to return and release their locks. It also waits for the executor's
// lock attempts still in flight, batch statements included whose callers
// gave up (a Wrap or WithLock job's run gives up when Stop begins): a batch
// whose callers have all left is cancelled, and a lock one takes after Stop
// began is released before Stop returns. If ctx ends first, Stop returns an
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
	e.stopNotStartedLocked()
	e.mu.Unlock()
	e.reg.close()
	e.stopBase(ErrStopped)
	e.here.close()

	select {
	case <-e.idle:
		if err := e.attempts.waitBatches(ctx); err != nil {
			return errors.Join(notStarted, err)
		}
		e.events.Wait(ctx)
		return notStarted
	case <-ctx.Done():
	}
	names := e.here.names()
	if len(names) == 0 {
		// What is left are loops between runs: they end at once, running nothing.
		<-e.idle
		return errors.Join(notStarted, e.attempts.waitBatches(ctx))
	}
	return errors.Join(notStarted, fmt.Errorf("shedlock: stop: %d tasks still running (%s): %w",
		len(names), strings.Join(names, ", "), ctx.Err()))
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

// The errors of the executor.
var (
	// ErrStopped is returned by Run, Wrap and FixedDelay after Executor.Stop, and
	// is the cause of a task context that Stop ended.
	ErrStopped = errors.New("shedlock: executor stopped")
	// ErrDuplicateName is returned when a second job is registered under a lock
	// name that one executor already runs: the two would block each other. Names
	// differing only by case, accents, emoji or trailing spaces are one name, as the store's
	// collation makes them one row; where the provider tells how its store
	// compares names (NameKeyer), names it keeps in one row are one name too.
	// An attempt on a name that is another's row, which registration could not
	// see, fails with it as well as with ErrInvalidConfig, naming both.
	ErrDuplicateName = lockerr.DuplicateName
	// ErrInvalidJob is returned for a job the executor cannot run as given: a nil
	// task or cron job, or a fixed delay that is not > 0.
	ErrInvalidJob = errors.New("shedlock: invalid job")
	// ErrNotStarted is returned by Stop when fixed-delay jobs were registered but
	// Start was never called: they never ran.
	ErrNotStarted = errors.New("shedlock: executor never started")
	// ErrTaskPanicked wraps a panic recovered from a task, with its value and stack.
	ErrTaskPanicked = errors.New("shedlock: task panicked")
	// ErrNotLocked is returned by AssertLocked when its context carries no lock, or
	// one that can no longer be relied on.
	ErrNotLocked = errors.New("shedlock: not running under a lock")
)
