package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
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
}

// fireRun is what a CatchUp job's run adds to a run (see CatchUp).
type fireRun struct {
	at      time.Time // the fire time the run stands for: the lock is taken for it, and a success records it
	holdEnd time.Time // a success holds the lock until then: the skew bound before the next fire time
	catchUp bool      // made by a check, not at its own fire time: the listeners get EventCatchUp
}

// run is Run on a checked config and task.
func (e *Executor) run(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, o jobOptions) (ran bool, err error) {
	return e.runFire(ctx, cfg, task, o, nil)
}

// runFire is run, for fire's fire time when fire is not nil: the lock is taken
// only if that fire time has not succeeded, and a success records it.
func (e *Executor) runFire(ctx context.Context, cfg LockConfig, task func(ctx context.Context) error, o jobOptions,
	fire *fireRun) (ran bool, err error) {
	key, entered, kind, err := e.enter(cfg.Name)
	if err != nil {
		return false, err
	}
	r := &run{e: e, ctx: ctx, cfg: cfg, key: key, fire: fire}
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
	return true, r.runHeld(lock, task, o.keepAlive)
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

// errGoexit stands for the error of a task that called runtime.Goexit.
var errGoexit = errors.New("shedlock: task called runtime.Goexit")

// runHeld runs the task on a hold of lock, then releases the lock, even when
// the task panics or calls runtime.Goexit.
func (r *run) runHeld(lock Lock, task func(ctx context.Context) error, keepAlive bool) error {
	l := newHold(r.ctx, r.cfg, lock, r.start, keepAlive, r.id, r.e.hooks)
	l.view = holdLock{l}
	// Acquired goes out before anything that could extend or end the hold.
	r.emit(r.acquired(l.until()), r.start)
	l.watch()
	r.e.here.addHold(l)
	if r.fire != nil && r.fire.catchUp {
		ev := r.event(EventCatchUp)
		ev.FireTime = r.fire.at
		r.emit(ev, time.Time{})
	}
	if keepAlive {
		l.startKeepAlive()
	}
	var taskStart time.Time
	if r.e.events != nil {
		taskStart = time.Now()
	}
	returned := false
	defer func() {
		if !returned { // runtime.Goexit: the goroutine ends, the lock must not stay
			r.e.log.ErrorContext(r.ctx, "shedlock: task called runtime.Goexit; its goroutine ends, its lock is released",
				"lock", r.cfg.Name)
			r.finished(l, errGoexit, TaskFailed, taskStart)
			_ = r.release(lock, false)
		}
	}()
	panicked, taskErr := runTask(l, r.cfg.Name, task)
	returned = true
	result := r.e.taskResult(r.ctx, taskErr, panicked)
	r.e.logTask(r.ctx, r.cfg.Name, taskErr, result)
	r.finished(l, taskErr, result, taskStart)
	if relErr := r.release(lock, result == TaskOK); relErr != nil {
		return errors.Join(taskErr, relErr)
	}
	return taskErr
}

// finished ends the hold and reports how the task ended.
func (r *run) finished(l *hold, err error, result TaskResult, taskStart time.Time) {
	cause := taskCause(l)
	l.finish()
	ev := r.event(EventFinished)
	ev.Err, ev.Result, ev.Cause = err, result, cause
	r.emit(ev, taskStart)
}

// release unlocks with a context of its own, so that a cancelled task context
// cannot keep the lock held, and logs a failure. It does not wait for the
// executor's attempts. A CatchUp job's run that succeeded records its fire
// time in the same statement, and holds the lock until the skew bound before
// the next fire time; one that did not frees the lock at once.
func (r *run) release(lock Lock, succeeded bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.e.releaseTimeout)
	defer cancel()
	var err error
	if fl, ok := lock.(FireLock); ok && r.fire != nil && succeeded {
		hold := max(r.fire.holdEnd.Sub(r.start), 0).Truncate(time.Millisecond)
		err = r.e.attempts.unlockSucceeded(ctx, fl, hold)
	} else {
		err = r.e.attempts.unlock(ctx, lock)
	}
	if err != nil {
		r.e.log.ErrorContext(r.ctx, "shedlock: release failed; the lock stays held until its lock_until",
			"lock", r.cfg.Name, "error", err)
		ev := r.event(EventReleaseFailed)
		ev.Err = err
		r.emit(ev, r.start)
		return err
	}
	r.emit(r.event(EventReleased), r.start)
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

// runTask runs task on the hold, turning a panic into ErrTaskPanicked.
func runTask(ctx context.Context, name string, task func(context.Context) error) (panicked bool, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			panicked, err = true, fmt.Errorf("%w: lock %q: %v\n%s", ErrTaskPanicked, name, rec, debug.Stack())
		}
	}()
	return false, task(ctx)
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
