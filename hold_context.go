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
// ran out, or the task has returned; nil while the hold holds.
func (v holdLock) CheckHeld() error {
	if cause := v.h.lostCause(); cause != nil {
		return fmt.Errorf("lock %q: %w", v.h.cfg.Name, cause)
	}
	return nil
}

// Fence forwards the fencing token of the run's lock.
func (v holdLock) Fence() (int64, bool) { return FenceOf(v.h.lock) }
