package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/eventqueue"
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

	delays          *fixedDelays  // the fixed-delay loops
	runNowEvery     time.Duration // how often to ask for run-now requests; 0: never
	runNowChecks    atomic.Bool   // the check for run-now requests has started
	notStartedAfter time.Duration // how long loops may wait for Start before a warning

	mu      sync.Mutex
	stopped bool
	live    int           // runs and loops under way
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
		keepAlive:      o.keepAlive,
		skipLevel:      o.skipLevel,
		attempts:       &attempts{provider: p, timeout: o.acquireTimeout, maxInFlight: o.maxInFlight, log: o.logger},
		events:         newEventQueue(o.listeners, o.logger),
		err:            err,
		seq:            new(runSeq),
		reg:            newRegistry(),
		here:           newRunsHere(),
		delays:         &fixedDelays{log: o.logger},
		runNowEvery:    o.runNowEvery,
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
	e.mu.Unlock()
	notStarted := e.delays.stop()
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

// holdHooks is what a run's hold may call back: made once, in NewExecutor,
// since each method value is an allocation.
func (e *Executor) holdHooks() *holdHooks {
	h := &holdHooks{log: e.log, noun: "lock", ended: e.holdEnded, finished: e.here.removeHold,
		extend: e.attempts.extend, clock: newHoldClock()}
	if e.events != nil {
		h.emit = e.emit
	}
	return h
}

// holdEnded reports a run's lock lost or run out while its task runs.
func (e *Executor) holdEnded(h *hold, kind EventKind, cause error, byKeepAlive bool) {
	if kind == EventLost {
		e.log.ErrorContext(h.parent, "shedlock: lock lost while the task runs; its context ends",
			"lock", h.cfg.Name, "error", cause)
	} else {
		e.log.WarnContext(h.parent, "shedlock: lock's LockAtMostFor ran out while the task runs; its context ends",
			"lock", h.cfg.Name)
	}
	h.emit(Event{Kind: kind, Err: cause, KeepAlive: byKeepAlive}, time.Time{})
}

// Jobs returns the jobs registered with the executor (WithLock, Wrap,
// Schedule, FixedDelay), by name, with their next fire times here. It costs
// no statement.
func (e *Executor) Jobs() []JobInfo { return e.reg.jobs(e.here.isRunning) }
