package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shedlock-go/shedlock/internal/inflight"
)

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
// An attempt made more than half of LockAtLeastFor after the run's fire time
// is skipped: (false, nil). The fire time is the one ctx carries
// (ContextWithFireTime, as WithLock and Schedule jobs are given), else the
// moment Run was called: so a run that waited in the executor's queue at a
// herd's tick gives up rather than take a lock whose tick another instance
// already ran. The executor keeps its attempts in flight within the provider's
// pool, sends those that queue together, and never makes a release or an
// extension wait for them (WithMaxInFlight).
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
	o, err := e.plainJobOptions(cfg.Name, "RunWith", opts)
	if err != nil {
		return false, err
	}
	return e.run(ctx, cfg, task, o)
}

// run is one call of Run: it takes the lock, runs the task on a lease, and
// releases the lock, telling the listeners each step. Its methods read in the
// order they happen.
type run struct {
	e     *Executor
	ctx   context.Context // the caller's
	cfg   LockConfig
	key   string // the name as the store compares it
	id    RunID
	start time.Time // when Run was called; the acquisition was sent after it
	fire  *fireRun  // a CatchUp job's run; nil for any other
	// requested is the store of the run-now request the run makes (see
	// WithRunNowCheck); nil for any other run
	requested RunRequester
}

// fireRun is what a CatchUp job's run adds to a run (see CatchUp).
type fireRun struct {
	at      time.Time // the fire time the run stands for: the lock is taken for it, and a success records it
	holdEnd time.Time // a success holds the lock until then: the skew bound before the next fire time
	catchUp bool      // made by a check, not at its own fire time: the listeners get EventCatchUp
}

// run is Run on a checked config and task.
func (e *Executor) run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, o jobOptions) (ran bool, err error) {
	return e.runFire(ctx, cfg, task, o, nil, nil)
}

// runFire is run, for fire's fire time when fire is not nil: the lock is taken
// only if that fire time has not succeeded, and a success records it; for a
// run-now request of rr's when rr is not nil: a run that returned (failed
// or not) marks it run.
func (e *Executor) runFire(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, o jobOptions,
	fire *fireRun, rr RunRequester) (ran bool, err error) {
	key, entered, kind, err := e.enter(cfg.Name)
	if err != nil {
		return false, err
	}
	r := &run{e: e, ctx: ctx, cfg: cfg, key: key, fire: fire, requested: rr}
	r.start = time.Now()
	if e.events != nil {
		r.id = e.seq.next()
		r.emit(r.event(EventAttempt), time.Time{})
	}
	if !entered {
		return false, r.skip(SkipRunningHere, "still running in this process")
	}
	var lock Lock
	if fire != nil {
		lock, err = e.attempts.tryFire(ctx, cfg, fire.at)
	} else {
		lock, err = e.attempts.try(ctx, cfg, r.key, kind, r.window())
	}
	defer e.leave(r.key, err == nil, errors.Is(err, ErrNotAcquired))
	if err != nil {
		return false, r.notTaken(err)
	}
	if e.base.Err() != nil { // Stop began while the lock was being taken
		r.emit(r.acquired(lockEnd(r.start, cfg.LockAtMostFor)), r.start)
		return false, errors.Join(ErrStopped, r.release(lock, false))
	}
	if rr != nil && !r.requestLeft(lock) {
		return false, r.skip(SkipRunNowDone, "its run-now request was run elsewhere")
	}
	return true, r.runHeld(lock, task, o.keepAlive)
}

// requestLeft reports whether the run-now request the run was made for is
// still there once the lock is taken: another instance may have run the last
// one since the check found it, and marked it run before releasing the lock
// this run took. Without one, the lock is released, with no events: the run
// reports a skip.
func (r *run) requestLeft(lock Lock) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.e.releaseTimeout)
	defer cancel()
	pending, err := r.requested.RunRequests(ctx, []string{r.cfg.Name})
	if err == nil && pending[r.cfg.Name] > 0 {
		return true
	}
	if err != nil {
		r.e.log.WarnContext(r.ctx, "shedlock: could not ask whether a run-now request is left; not run now",
			"lock", r.cfg.Name, "error", err)
	}
	if err := r.e.attempts.unlock(ctx, lock); err != nil {
		r.e.log.WarnContext(r.ctx, "shedlock: release failed; the lock stays held until its lock_until",
			"lock", r.cfg.Name, "error", err)
	}
	return false
}

// skipLate reports an attempt of a Schedule'd job made too late for a hold
// that ends before its next fire time (see scheduledJob.config): skipped as
// SkipLate, as an attempt past its window is, with no statement sent.
func (e *Executor) skipLate(ctx context.Context, cfg LockConfig) {
	if e.base.Err() != nil {
		return // runs nothing, and reports nothing, as run after Stop
	}
	r := &run{e: e, ctx: ctx, cfg: cfg, start: time.Now()}
	if e.events != nil {
		r.id = e.seq.next()
		r.emit(r.event(EventAttempt), time.Time{})
	}
	_ = r.skip(SkipLate, "too late for a hold that ends before the next fire time")
}

// window is the end of the run's window (see windowEnd), warning once per
// name when the run comes after it.
func (r *run) window() time.Time {
	end := windowEnd(r.ctx, r.cfg, r.start)
	if !end.IsZero() && !r.start.Before(end) {
		r.e.warnLateOnce(r.ctx, r.key, r.cfg.Name)
	}
	return end
}

// notTaken reports why the lock was not taken, and returns what Run does:
// nil when the run is skipped, the store's error when it failed.
func (r *run) notTaken(err error) error {
	switch {
	case errors.Is(err, errLate):
		return r.skip(SkipLate, "past its fire time's window")
	case errors.Is(err, ErrPaused):
		return r.skip(SkipPaused, "paused by an operator")
	case errors.Is(err, ErrNotAcquired):
		return r.skip(SkipHeldElsewhere, "lock held elsewhere")
	}
	level := slog.LevelError
	if r.ctx.Err() != nil || r.e.base.Err() != nil {
		level = slog.LevelDebug // the caller, or Stop, gave up: not a store failure
	}
	r.e.log.Log(r.ctx, level, "shedlock: could not take lock; task not run", "lock", r.cfg.Name, "error", err)
	ev := r.event(EventStoreError)
	ev.Err = err
	r.emit(ev, r.start)
	return err
}

// skip reports a run whose task does not run; it is not an error.
func (r *run) skip(why SkipReason, msg string) error {
	r.e.log.Log(r.ctx, r.e.skipLevel, "shedlock: skipped, "+msg, "lock", r.cfg.Name)
	ev := r.event(EventSkipped)
	ev.Skip = why
	r.emit(ev, r.start)
	return nil
}

// event is an event of this run.
func (r *run) event(kind EventKind) Event { return Event{Kind: kind, Run: r.id, Config: r.cfg} }

// acquired is the run's EventAcquired, with the end its task may count on.
func (r *run) acquired(until time.Time) Event {
	ev := r.event(EventAcquired)
	ev.Until = until
	return ev
}

// emit hands ev to the listeners (see Executor.emit).
func (r *run) emit(ev Event, from time.Time) { r.e.emit(r.ctx, ev, from) }

// enter starts a run of name here, unless the executor has stopped
// (ErrStopped) or the name runs here already (entered false).
func (e *Executor) enter(name string) (key string, entered bool, kind inflight.Kind, err error) {
	if !e.beginLive() {
		return "", false, 0, ErrStopped
	}
	key, entered, kind = e.here.enter(name)
	if !entered {
		e.endLive()
	}
	return key, entered, kind, nil
}

// leave ends key's run here (see runsHere.leave).
func (e *Executor) leave(key string, took, heldElsewhere bool) {
	e.here.leave(key, took, heldElsewhere)
	e.endLive()
}

// warnLateOnce warns, once per name, of a run whose fire time's window had
// passed before it was called: a fire time far in the past (the zero time is
// none) skips every run of the job, which at the skip level alone would go
// unseen.
func (e *Executor) warnLateOnce(ctx context.Context, key, name string) {
	if e.here.firstLate(key) {
		e.log.WarnContext(ctx, "shedlock: run came after its fire time's window, so it is skipped; "+
			"is the fire time given to ContextWithFireTime the run's tick?", "lock", name)
	}
}
