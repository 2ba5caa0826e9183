package shedlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// A hold is the context its holder works under: it ends when the caller's
// context does, on stop, and when the lock ends (expire, lose). Its deadline
// follows the lock's end: each successful Extend moves it. It is a context of
// its own because a WithDeadline cannot move.
//
// Two cancel contexts carry it: inner holds the cause (context.Cause finds it
// through Value), outer, its child, closes Done. Done and inner differing
// makes contexts derived from the hold register through AfterFunc, so that
// they get the hold's own Err: DeadlineExceeded when the deadline passed.

// Deadline reports the lock's deadline, or the caller's if that is earlier.
func (h *hold) Deadline() (time.Time, bool) {
	d := h.until()
	if pd, ok := h.parent.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Done is closed when the hold's context ends.
func (h *hold) Done() <-chan struct{} { return h.outer.Done() }

// Err is DeadlineExceeded once the deadline has passed, else the cancellation's.
func (h *hold) Err() error {
	if h.outer.Err() == nil {
		return nil
	}
	if h.expired.Load() {
		return context.DeadlineExceeded
	}
	return h.inner.Err()
}

// AfterFunc runs f in a goroutine of its own once the context ends; contexts
// derived from the hold use it to end with it, with its Err and cause.
func (h *hold) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(h.outer, f) }

// Value answers LockFromContext with the lock as the holder sees it, and
// context.Cause with the hold's cause.
func (h *hold) Value(key any) any {
	if key == (lockKey{}) {
		return h.view
	}
	return h.inner.Value(key)
}

func (h *hold) String() string {
	return "shedlock context of " + h.hooks.noun + " " + strconv.Quote(h.cfg.Name)
}

// holdLock is a run's lock as its task sees it through LockFromContext.
type holdLock struct{ h *hold }

// Unlock is refused: the executor releases the lock when the task returns.
func (v holdLock) Unlock(context.Context) error {
	return fmt.Errorf("shedlock: lock %q: the executor releases a task's lock when the task returns: %w",
		v.h.cfg.Name, errors.ErrUnsupported)
}

// Extend extends the lock and moves the task's deadline to match; keep-alive,
// if on, goes on with these durations. ErrLockLost ends the task's context.
func (v holdLock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := validateDurations(v.h.cfg.Name, lockAtMostFor, lockAtLeastFor); err != nil {
		return err
	}
	return v.h.extend(ctx, lockAtMostFor, lockAtLeastFor, false)
}

// CheckHeld reports why the task can no longer rely on its lock: it was lost,
// ran out (whether or not the clock has fired yet), or the task has
// returned; nil while the hold holds.
func (v holdLock) CheckHeld() error {
	v.h.expireIfDue()
	if cause := v.h.lostCause(); cause != nil {
		return fmt.Errorf("lock %q: %w", v.h.cfg.Name, cause)
	}
	return nil
}

// Fence forwards the fencing token of the run's lock.
func (v holdLock) Fence() (int64, bool) { return FenceOf(v.h.lock) }

type lockKey struct{}

// ContextWithLock returns a copy of parent that carries l: LockFromContext
// returns it and AssertLocked passes. The executor gives every task such a
// context itself; use this where a lock is taken by hand with TryLock, and in
// tests (shedlocktest.LockedContext gives one with no store behind it).
func ContextWithLock(parent context.Context, l Lock) context.Context {
	return context.WithValue(parent, lockKey{}, l)
}

// LockFromContext returns the lock a task runs under: the executor puts it in
// every task's context. Through it the task can Extend its lock by hand, which
// also moves its context's deadline; its Unlock is refused, since the executor
// releases the lock when the task returns.
func LockFromContext(ctx context.Context) (Lock, bool) {
	l, ok := ctx.Value(lockKey{}).(Lock)
	return l, ok && l != nil
}

// AssertLocked reports whether ctx belongs to code running under a lock, as Java
// ShedLock's LockAssert does: nil inside a task run by the executor, or under a
// context from ContextWithLock. Otherwise it returns an error wrapping
// ErrNotLocked, also when the lock can tell that it was lost, ran out or was
// released (see HoldChecker; the error then wraps that cause too). Every lock
// of this package's providers and of the executor can tell. Call it at the top of code that must
// never run unlocked, so that a caller who forgot the lock finds out at once.
func AssertLocked(ctx context.Context) error {
	l, ok := LockFromContext(ctx)
	if !ok {
		return ErrNotLocked
	}
	if c, ok := l.(HoldChecker); ok {
		if err := c.CheckHeld(); err != nil {
			return fmt.Errorf("%w: %w", ErrNotLocked, err)
		}
	}
	return nil
}

// FenceOf returns l's fencing token: larger for every later acquisition of the
// same name, by any instance, in the same store. ok is false where the store
// keeps none (a Java ShedLock table without the column). Locks that carry one
// have Fence() (int64, bool); FenceOf uses it.
//
// The token is the acquisition's, kept through Extend. A job passes it with
// every write it protects, and the store that receives the write refuses a
// token older than the last it saw:
//
//	UPDATE orders SET state = ?, last_fence = ? WHERE id = ? AND (last_fence IS NULL OR last_fence < ?)
//
// A holder paused past its lease (a long GC pause, a stopped VM) then cannot
// overwrite what the next holder wrote: its write changes no row. The SQL
// providers write the token in the acquiring statement itself when the table
// has the fence column (migration 0002, or EnsureTable for a new table), and
// shedlockredis in the same script; see "The guarantee, and its limits" in the
// README for what holds when Java ShedLock pods share the table.
func FenceOf(l Lock) (fence int64, ok bool) {
	if f, is := l.(interface{ Fence() (int64, bool) }); is {
		return f.Fence()
	}
	return 0, false
}

// FenceFromContext returns the fencing token of the lock a task runs under
// (see LockFromContext and FenceOf): ok is false outside a locked task or when
// the store keeps no token.
func FenceFromContext(ctx context.Context) (fence int64, ok bool) {
	l, is := LockFromContext(ctx)
	if !is {
		return 0, false
	}
	return FenceOf(l)
}

// ErrNotLocked is returned by AssertLocked when its context carries no lock, or
// one that can no longer be relied on.
var ErrNotLocked = errors.New("shedlock: not running under a lock")
