package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// lease is one run's hold on its lock, and the task's context: it ends when the
// caller's context does, on Stop (cause ErrStopped), when the lock's time runs
// out (ErrLockExpired) and when the lock is found lost (ErrLockLost). Its
// deadline follows the lock's end: each successful Extend, by keep-alive or by
// the task, moves it. It is a context of its own because a WithDeadline cannot
// move. Waiting needs no goroutine nor timer of its own: the executor's
// leaseClock ends it once its deadline has passed.
//
// Two cancel contexts carry it: inner holds the cause (context.Cause finds it
// through Value), outer, its child, closes Done. Done and inner differing makes
// contexts derived from the lease register through AfterFunc, so that they get
// the lease's own Err: DeadlineExceeded when the deadline passed.
type lease struct {
	parent      context.Context // the caller's context
	inner       context.Context // WithCancelCause(parent): ended with the cause
	cancel      context.CancelCauseFunc
	outer       context.Context // WithCancel(inner): its Done is the lease's
	cancelOuter context.CancelFunc
	expired     atomic.Bool // the deadline passed: Err is DeadlineExceeded
	hooks       *leaseHooks
	lock        Lock
	cfg         LockConfig
	run         RunID
	keepAlive   bool

	mu          sync.Mutex
	deadline    time.Time     // when the task's context ends unless the lock is extended
	most, least time.Duration // what the next keep-alive Extend asks for
	ended       error         // why the lease ended early: lost or expired; nil while it holds
	finished    bool          // the task has returned; nothing changes after
	lastErr     error         // keep-alive's last failed Extend, for the cause if time runs out
	turn        chan struct{} // one Extend at a time; made by the first

	keepAliveStop context.CancelFunc // ends keep-alive and its Extend under way
	keepAliveDone chan struct{}      // closed when keep-alive has ended
}

// leaseHooks is what a lease needs of the executor that runs it; the lease
// holds no executor.
type leaseHooks struct {
	log *slog.Logger
	// emit hands an event to the listeners; nil without listeners.
	emit func(ctx context.Context, ev Event, from time.Time)
	// finished tells the executor that the task has returned.
	finished func(*lease)
	// extend extends the lock within the executor's bound.
	extend func(ctx context.Context, lock Lock, most, least time.Duration) error
	// clock ends the executor's leases at their deadlines.
	clock *leaseClock
}

// lockEnd is when the task's context ends for a lock whose LockAtMostFor
// mostFor was asked for at sent: a margin before the lock's end, so that the
// task can stop before another instance may take the lock. The store computed
// the lock's end from a later now, so an end counted from sent is never past
// it.
func lockEnd(sent time.Time, mostFor time.Duration) time.Time {
	return sent.Add(mostFor - min(mostFor/10, 5*time.Second))
}

// newLease starts a run's lease, and reports the lock acquired. Keep-alive,
// if on, is the caller's to start (startKeepAlive).
func newLease(ctx context.Context, cfg LockConfig, lock Lock, sent time.Time, keepAlive bool, run RunID, hooks *leaseHooks) *lease {
	l := &lease{parent: ctx, hooks: hooks, lock: lock, cfg: cfg, run: run, keepAlive: keepAlive,
		most: cfg.LockAtMostFor, least: cfg.LockAtLeastFor}
	l.inner, l.cancel = context.WithCancelCause(ctx)
	l.outer, l.cancelOuter = context.WithCancel(l.inner)
	l.deadline = lockEnd(sent, cfg.LockAtMostFor)
	// Acquired goes out before anything that could extend or end the lease.
	l.emit(Event{Kind: EventAcquired, Until: l.deadline}, sent)
	hooks.clock.watch(l, l.deadline)
	return l
}

// emit hands one of the run's events to the listeners, if any.
func (l *lease) emit(ev Event, from time.Time) {
	if l.hooks.emit != nil {
		ev.Run, ev.Config = l.run, l.cfg
		l.hooks.emit(l.parent, ev, from)
	}
}

// Deadline reports the lock's deadline, or the caller's if that is earlier.
func (l *lease) Deadline() (time.Time, bool) {
	l.mu.Lock()
	d := l.deadline
	l.mu.Unlock()
	if pd, ok := l.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Done is closed when the lease ends.
func (l *lease) Done() <-chan struct{} { return l.outer.Done() }

// Err is DeadlineExceeded once the deadline has passed, else the cancellation's.
func (l *lease) Err() error {
	if l.outer.Err() == nil {
		return nil
	}
	if l.expired.Load() {
		return context.DeadlineExceeded
	}
	return l.inner.Err()
}

// AfterFunc runs f in a goroutine of its own once the lease ends; contexts
// derived from the lease use it to end with it, with its Err and cause.
func (l *lease) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(l.outer, f) }

// Value answers LockFromContext with the run's lock as the task sees it, and
// context.Cause with the lease's cause.
func (l *lease) Value(key any) any {
	if key == (lockKey{}) {
		return leaseLock{l}
	}
	return l.inner.Value(key)
}

func (l *lease) String() string { return "shedlock task context for lock " + strconv.Quote(l.cfg.Name) }

// clockState is what the lease clock needs: the deadline, and whether the
// lease still holds (live), so that it may have to end it.
func (l *lease) clockState() (deadline time.Time, live bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadline, !l.finished && l.ended == nil
}

// expire ends the lease when its deadline passes; a deadline moved since the
// clock looked is watched again instead.
func (l *lease) expire() {
	l.mu.Lock()
	if l.finished || l.ended != nil {
		l.mu.Unlock()
		return
	}
	if deadline := l.deadline; time.Until(deadline) > 0 {
		l.mu.Unlock()
		l.hooks.clock.watch(l, deadline)
		return
	}
	defer l.mu.Unlock()
	kind, cause := EventExpired, ErrLockExpired
	if l.keepAlive {
		kind = EventLost
		cause = fmt.Errorf("%w: keep-alive could not extend it before LockAtMostFor ran out", ErrLockLost)
		if l.lastErr != nil {
			cause = fmt.Errorf("%w: %w", cause, l.lastErr)
		}
	}
	if l.inner.Err() == nil {
		l.expired.Store(true)
	}
	l.endLocked(kind, cause, l.keepAlive)
}

// lose ends the lease because an Extend found the lock no longer ours.
func (l *lease) lose(cause error, byKeepAlive bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.ended != nil {
		return
	}
	l.endLocked(EventLost, cause, byKeepAlive)
}

// endLocked ends the lease with cause. The event goes out before the context
// ends, so that no listener sees the task finish before the loss that ended it.
// l.mu must be held.
func (l *lease) endLocked(kind EventKind, cause error, byKeepAlive bool) {
	l.ended = cause
	if kind == EventLost {
		l.hooks.log.ErrorContext(l.parent, "shedlock: lock lost while the task runs; its context ends",
			"lock", l.cfg.Name, "error", cause)
	} else {
		l.hooks.log.WarnContext(l.parent, "shedlock: lock's LockAtMostFor ran out while the task runs; its context ends",
			"lock", l.cfg.Name)
	}
	l.emit(Event{Kind: kind, Err: cause, KeepAlive: byKeepAlive}, time.Time{})
	l.cancel(cause)
}

// finish ends the lease after the task returned: keep-alive stops (its Extend
// under way is cancelled) before the lock is released, and nothing moves after.
func (l *lease) finish() {
	l.mu.Lock()
	l.finished = true
	l.mu.Unlock()
	l.hooks.clock.forget(l)
	if l.keepAliveStop != nil {
		l.keepAliveStop()
		<-l.keepAliveDone
	}
	l.hooks.finished(l)
	l.cancel(nil)
	l.cancelOuter()
}

// lostCause reports why the lock can no longer be relied on: the cause the lease
// ended with, or that the task has returned; nil while the lease holds.
func (l *lease) lostCause() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ended != nil:
		return l.ended
	case l.finished:
		return errors.New("shedlock: the task has returned and its lock was released")
	}
	return nil
}

// checkHeld refuses an Extend once the lease has ended: the task can no longer
// rely on the lock, even if the store would still extend it.
func (l *lease) checkHeld() error {
	if cause := l.lostCause(); cause != nil {
		return fmt.Errorf("%w: lock %q: %w", ErrLockLost, l.cfg.Name, cause)
	}
	return nil
}

// take waits for the lease's turn to extend, or for ctx to end.
func (l *lease) take(ctx context.Context) error {
	l.mu.Lock()
	if l.turn == nil {
		l.turn = make(chan struct{}, 1)
	}
	turn := l.turn
	l.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shedlock: extend %q: %w", l.cfg.Name, context.Cause(ctx))
	}
}

func (l *lease) give() { <-l.turn }

// extend extends the lock and, if it is still ours, moves the task's deadline.
// ErrLockLost from the store ends the lease; another error leaves it as it was.
func (l *lease) extend(ctx context.Context, most, least time.Duration, byKeepAlive bool) error {
	if err := l.checkHeld(); err != nil {
		return err
	}
	if err := l.take(ctx); err != nil {
		return err
	}
	defer l.give()
	if err := l.checkHeld(); err != nil {
		return err
	}
	sent := time.Now()
	err := l.hooks.extend(ctx, l.lock, most, least) // never waits for the executor's attempts
	if errors.Is(err, ErrLockLost) {
		l.lose(fmt.Errorf("%w: lock %q: an Extend was refused", ErrLockLost, l.cfg.Name), byKeepAlive)
		return err
	}

	l.mu.Lock()
	if err != nil {
		if byKeepAlive {
			l.lastErr = err
		}
		if !l.finished {
			l.emit(Event{Kind: EventExtendFailed, Err: err, KeepAlive: byKeepAlive}, sent)
		}
		l.mu.Unlock()
		return err
	}
	if l.finished || l.ended != nil {
		l.mu.Unlock()
		return nil // the store has it, but the task's context has already ended
	}
	l.lastErr = nil
	l.most, l.least = most, least
	l.deadline = lockEnd(sent, most)
	deadline := l.deadline
	l.emit(Event{Kind: EventExtended, Until: deadline, KeepAlive: byKeepAlive}, sent)
	l.mu.Unlock()
	l.hooks.clock.watch(l, deadline) // after l.mu: the clock takes a lease's lock under its own
	return nil
}
