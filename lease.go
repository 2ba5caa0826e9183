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

	"github.com/shedlock-go/shedlock/internal/inflight"
)

// lease is one run's hold on its lock, and the task's context: it ends when the
// caller's context does, on Stop (cause ErrStopped), when the lock's time runs
// out (ErrLockExpired) and when the lock is found lost (ErrLockLost). Its
// deadline follows the lock's end: each successful Extend, by keep-alive or by
// the task, moves it. It is a context of its own because a WithDeadline cannot
// move. Waiting needs no goroutine: a timer fires at the deadline and re-arms if
// the deadline moved.
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
	hooks       leaseHooks
	lock        Lock
	cfg         LockConfig
	run         RunID
	keepAlive   bool

	mu          sync.Mutex
	deadline    time.Time     // when the task's context ends unless the lock is extended
	most, least time.Duration // what the next keep-alive Extend asks for
	timer       *time.Timer   // fires at deadline
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
	// slots bounds the executor's statements in flight; nil for none.
	slots *inflight.Slots
}

// leaseMargin is how long before the lock's end the task's context ends, so that
// the task can stop before another instance may take the lock.
func leaseMargin(mostFor time.Duration) time.Duration {
	return min(mostFor/10, 5*time.Second)
}

// newLease starts a run's lease, and reports the lock acquired. sent is when the
// lock's statement was about to be sent: the store computed the lock's end from a
// later now, so a deadline counted from sent is never past it.
func (e *Executor) newLease(ctx context.Context, cfg LockConfig, lock Lock, sent time.Time, keepAlive bool, run RunID) *lease {
	l := &lease{parent: ctx, hooks: e.leaseHooks(), lock: lock, cfg: cfg, run: run, keepAlive: keepAlive,
		most: cfg.LockAtMostFor, least: cfg.LockAtLeastFor}
	l.inner, l.cancel = context.WithCancelCause(ctx)
	l.outer, l.cancelOuter = context.WithCancel(l.inner)
	l.deadline = sent.Add(cfg.LockAtMostFor - leaseMargin(cfg.LockAtMostFor))
	// Acquired goes out before anything that could extend or end the lease.
	e.emit(ctx, Event{Kind: EventAcquired, Run: run, Config: cfg, Until: l.deadline}, sent)
	l.mu.Lock()
	l.timer = time.AfterFunc(time.Until(l.deadline), l.expire)
	l.mu.Unlock()
	e.addLease(l)
	if keepAlive {
		l.startKeepAlive()
	}
	return l
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

// expire ends the lease when its deadline passes; a deadline moved since the
// timer was set re-arms it instead.
func (l *lease) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.ended != nil {
		return
	}
	if wait := time.Until(l.deadline); wait > 0 {
		l.timer.Reset(wait)
		return
	}
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
	l.timer.Stop()
	if kind == EventLost {
		l.hooks.log.ErrorContext(l.parent, "shedlock: lock lost while the task runs; its context ends",
			"lock", l.cfg.Name, "error", cause)
	} else {
		l.hooks.log.WarnContext(l.parent, "shedlock: lock's LockAtMostFor ran out while the task runs; its context ends",
			"lock", l.cfg.Name)
	}
	if l.hooks.emit != nil {
		l.hooks.emit(l.parent, Event{Kind: kind, Run: l.run, Config: l.cfg, Err: cause, KeepAlive: byKeepAlive}, time.Time{})
	}
	l.cancel(cause)
}

// finish ends the lease after the task returned: keep-alive stops (its Extend
// under way is cancelled) before the lock is released, and nothing moves after.
func (l *lease) finish() {
	l.mu.Lock()
	l.finished = true
	l.timer.Stop()
	l.mu.Unlock()
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
	err := l.extendLock(ctx, most, least)
	if errors.Is(err, ErrLockLost) {
		l.lose(fmt.Errorf("%w: lock %q: an Extend was refused", ErrLockLost, l.cfg.Name), byKeepAlive)
		return err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if byKeepAlive {
			l.lastErr = err
		}
		if l.hooks.emit != nil && !l.finished {
			l.hooks.emit(l.parent, Event{Kind: EventExtendFailed, Run: l.run, Config: l.cfg, Err: err, KeepAlive: byKeepAlive}, sent)
		}
		return err
	}
	if l.finished || l.ended != nil {
		return nil // the store has it, but the task's context has already ended
	}
	l.lastErr = nil
	l.most, l.least = most, least
	l.deadline = sent.Add(most - leaseMargin(most))
	l.timer.Reset(time.Until(l.deadline))
	if l.hooks.emit != nil {
		l.hooks.emit(l.parent, Event{Kind: EventExtended, Run: l.run, Config: l.cfg, Until: l.deadline, KeepAlive: byKeepAlive}, sent)
	}
	return nil
}

// leaseLock is a run's lock as its task sees it through LockFromContext.
type leaseLock struct{ l *lease }

// Unlock is refused: the executor releases the lock when the task returns.
func (h leaseLock) Unlock(context.Context) error {
	return fmt.Errorf("shedlock: lock %q: the executor releases a task's lock when the task returns: %w",
		h.l.cfg.Name, errors.ErrUnsupported)
}

// Extend extends the lock and moves the task's deadline to match; keep-alive,
// if on, goes on with these durations. ErrLockLost ends the task's context.
func (h leaseLock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := validateDurations(h.l.cfg.Name, lockAtMostFor, lockAtLeastFor); err != nil {
		return err
	}
	return h.l.extend(ctx, lockAtMostFor, lockAtLeastFor, false)
}

// CheckHeld reports why the task can no longer rely on its lock: it was lost,
// ran out, or the task has returned; nil while the lease holds.
func (h leaseLock) CheckHeld() error {
	if cause := h.l.lostCause(); cause != nil {
		return fmt.Errorf("lock %q: %w", h.l.cfg.Name, cause)
	}
	return nil
}

// Fence forwards the fencing token of the run's lock.
func (h leaseLock) Fence() (int64, bool) { return FenceOf(h.l.lock) }
