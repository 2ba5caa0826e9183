package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock/internal/eventqueue"
	"github.com/shedlock-go/shedlock/internal/jobname"
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
	hooks          *leaseHooks              // what every run's lease calls back

	base     context.Context // ends when Stop begins, with the cause ErrStopped
	stopBase context.CancelCauseFunc

	mu      sync.Mutex
	stopped bool
	started bool
	running map[string]string   // jobname.Key -> name, for names with a Run under way here
	wonLast map[string]struct{} // jobname.Keys whose last attempt here took the lock; see inflight.WonLast
	late    map[string]struct{} // jobname.Keys warned of a run late on arrival; see warnLateOnce
	keys    map[string]string   // name -> jobname.Key, for the names Run was called with; see keyLocked
	leases  map[*lease]struct{} // tasks running: Stop ends their contexts
	names   map[string]string   // jobname.Key -> name registered by WithLock, Wrap and FixedDelay
	// the provider's NameKey -> name registered, for a NameKeyer; and
	// jobname.Key -> NameKey, to free it with the name
	storeNames, storeKeys map[string]string
	noNameKeys            atomic.Bool // the provider's NameKey timed out once: not asked again
	loops                 []*fixedDelayLoop
	// notStarted warns once of fixed-delay loops registered and not started
	// within notStartedAfter; nil until the first such loop.
	notStarted      *time.Timer
	notStartedAfter time.Duration
	runs            int           // Run calls under way
	live            int           // Run calls and fixed-delay loops under way
	idle            chan struct{} // closed once stopped with nothing live

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
		keepAlive:      o.keepAlive,
		skipLevel:      o.skipLevel,
		attempts:       &attempts{provider: p, timeout: o.acquireTimeout, maxInFlight: o.maxInFlight, log: o.logger},
		events:         newEventQueue(o.listeners, o.logger),
		err:            err,
		running:        make(map[string]string),
		wonLast:        make(map[string]struct{}),
		late:           make(map[string]struct{}),
		keys:           make(map[string]string),
		seq:            new(runSeq),
		leases:         make(map[*lease]struct{}),
		names:          make(map[string]string),
		storeNames:     make(map[string]string),
		storeKeys:      make(map[string]string),
		idle:           make(chan struct{}),

		notStartedAfter: notStartedWarnAfter,
	}
	e.base, e.stopBase = context.WithCancelCause(context.Background())
	e.hooks = e.leaseHooks()
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

// cronEntry is where Schedule added a name's job (see freeRemoved).
type cronEntry struct {
	c  *cron.Cron
	id cron.EntryID
}

// registerLocked claims name for one job, unless the executor has stopped;
// storeKey is the provider's NameKey of it ("": none). e.mu must be held.
func (e *Executor) registerLocked(name, storeKey string) error {
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
	if first, ok := e.storeNames[storeKey]; ok && storeKey != "" {
		return fmt.Errorf("%w: %q is %q to the store (its collation keeps both in one row)", ErrDuplicateName, name, first)
	}
	e.names[key] = name
	if storeKey != "" {
		e.storeNames[storeKey] = name
		e.storeKeys[key] = storeKey
	}
	return nil
}

// endLiveLocked counts down a Run or a loop; the last one after Stop wakes Stop.
func (e *Executor) endLiveLocked() {
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
		if err := e.attempts.waitBatches(ctx); err != nil {
			return errors.Join(notStarted, err)
		}
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
		return errors.Join(notStarted, e.attempts.waitBatches(ctx))
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
