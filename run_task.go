package shedlock

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

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
	// A request asks for one run, not for a success: a task that failed
	// would otherwise run again at every check, on every pod. A run that
	// Stop cancelled did not have its turn: its request is left for another.
	if r.requested != nil && result != TaskCancelled {
		r.runNowDone(lock)
	}
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

// runNowDone marks the run-now request the run made as run, while the lock
// is still held: a request whose run died before is left for another.
func (r *run) runNowDone(lock Lock) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), r.e.releaseTimeout)
	defer cancel()
	if err := r.requested.RunDone(ctx, r.cfg.Name, lock); err != nil {
		r.e.log.WarnContext(r.ctx, "shedlock: run-now request ran but could not be marked run; it may run again",
			"lock", r.cfg.Name, "error", err)
	}
}

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
