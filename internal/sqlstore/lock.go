package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/lockend"
	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/retry"
)

// Lock is one acquisition by a SQL provider.
type Lock struct {
	e     *Engine
	name  string
	args  Args          // the name and this acquisition's token
	fence int64         // the fencing token; 0 for none
	turn  chan struct{} // one Unlock or Extend at a time; waiting ends with ctx

	leastFor time.Duration // guarded by turn
	done     error         // why the lock is no longer held: released or found lost; guarded by turn

	taken time.Time    // when the acquiring statement was sent, with the monotonic clock
	ends  atomic.Int64 // when the lock ends, as nanoseconds after taken

	fire    int64 // the fire time, in milliseconds since 1970, TryLockFire took the lock for
	fireSet bool
}

func (e *Engine) grant(name string, args Args, fence int64, sent time.Time, mostFor, leastFor time.Duration) *Lock {
	l := &Lock{e: e, name: name, args: args, fence: fence, leastFor: ceilMillis(leastFor), turn: make(chan struct{}, 1), taken: sent}
	l.ends.Store(int64(mostFor - lockend.Margin(mostFor)))
	return l
}

// Fence returns the acquisition's fencing token, which Extend keeps; ok is
// false when the table has no fence column.
func (l *Lock) Fence() (fence int64, ok bool) { return l.fence, l.fence != 0 }

func (l *Lock) take(ctx context.Context) error {
	select {
	case l.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shedlock: lock %q: %w", l.name, context.Cause(ctx))
	}
}

func (l *Lock) give() { <-l.turn }

// errReleased is why a released lock is no longer held.
var errReleased = errors.New("it was released")

// Unlock releases the lock, keeping it until LockAtLeastFor after it was taken. A
// failed statement is retried; when every try fails the error wraps
// lockerr.ReleaseFailed and the lock stays until its lock_until.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.unlock(ctx, func(ctx context.Context) (bool, error) { return l.e.store.Release(ctx, l.args, l.leastFor) })
}

// unlock runs release, the statement that releases the lock, retrying it as
// Unlock says.
func (l *Lock) unlock(ctx context.Context, release func(context.Context) (bool, error)) error {
	if err := l.take(ctx); err != nil {
		return fmt.Errorf("%w: %w", lockerr.ReleaseFailed, err)
	}
	defer l.give()
	if l.done != nil {
		return fmt.Errorf("%w: lock %q: %w", lockerr.LockLost, l.name, l.done)
	}
	var ours bool
	err := retry.Do(ctx, l.e.cfg.Retries, l.e.cfg.Backoff, func() error {
		var err error
		ours, err = statement(l.e, ctx, release)
		return err
	}, func(attempt int, err error) {
		l.e.cfg.Logger.WarnContext(ctx, "shedlock: release failed, retrying",
			"lock", l.name, "attempt", attempt+1, "error", err)
	})
	if err != nil {
		return fmt.Errorf("%w: lock %q: %w", lockerr.ReleaseFailed, l.name, errors.Join(err, ctx.Err()))
	}
	l.done = errReleased
	if !ours {
		l.done = errors.New("it was taken away before its release")
		return lockerr.LockLost
	}
	return nil
}

// Extend moves the lock's end to now + lockAtMostFor while it is still ours and
// unexpired; lockerr.LockLost otherwise. lockAtLeastFor replaces the minimum
// hold that Unlock keeps, still counted from when the lock was taken.
func (l *Lock) Extend(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration) error {
	if err := l.e.cfg.CheckDurations(l.name, lockAtMostFor, lockAtLeastFor); err != nil {
		return err
	}
	return l.ExtendChecked(ctx, lockAtMostFor, lockAtLeastFor, lockcfg.Checked{})
}

// ExtendChecked is Extend on durations the executor has checked
// (lockcfg.Checked): what only the store can know is still checked.
func (l *Lock) ExtendChecked(ctx context.Context, lockAtMostFor, lockAtLeastFor time.Duration, _ lockcfg.Checked) error {
	if err := l.e.CheckEnd(l.name, lockAtMostFor); err != nil {
		return err
	}
	if err := l.take(ctx); err != nil {
		return err
	}
	defer l.give()
	if l.done != nil {
		return fmt.Errorf("%w: lock %q: %w", lockerr.LockLost, l.name, l.done)
	}
	most := ceilMillis(lockAtMostFor)
	sent := time.Now()
	ours, err := statement(l.e, ctx, func(ctx context.Context) (bool, error) { return l.e.store.Extend(ctx, l.args, most) })
	if err != nil {
		return fmt.Errorf("shedlock: extend %q: %w", l.name, err)
	}
	if !ours {
		l.done = errors.New("an Extend found it expired or taken")
		return lockerr.LockLost
	}
	l.leastFor = ceilMillis(lockAtLeastFor)
	l.ends.Store(int64(sent.Sub(l.taken) + most - lockend.Margin(most)))
	return nil
}

// CheckHeld reports, without asking the store, whether the lock can still be
// relied on: nil until it is released, found lost, or past its end.
func (l *Lock) CheckHeld() error {
	select {
	case l.turn <- struct{}{}:
		done := l.done
		l.give()
		if done != nil {
			return fmt.Errorf("%w: lock %q: %w", lockerr.LockLost, l.name, done)
		}
	default: // an Unlock or Extend is under way: judge by the end alone
	}
	if time.Since(l.taken) >= time.Duration(l.ends.Load()) {
		return fmt.Errorf("%w: lock %q", lockerr.LockExpired, l.name)
	}
	return nil
}
