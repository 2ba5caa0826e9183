package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

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
