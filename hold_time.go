package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// take waits for the hold's turn to extend, or for ctx to end.
func (h *hold) take(ctx context.Context) error {
	h.mu.Lock()
	if h.turn == nil {
		h.turn = make(chan struct{}, 1)
	}
	turn := h.turn
	h.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shedlock: extend %q: %w", h.cfg.Name, context.Cause(ctx))
	}
}

func (h *hold) give() { <-h.turn }

// checkHeld refuses an Extend once the hold has ended: the holder can no
// longer rely on the lock, even if the store would still extend it.
func (h *hold) checkHeld() error {
	if cause := h.lostCause(); cause != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrLockLost, h.hooks.noun, h.cfg.Name, cause)
	}
	return nil
}

// extend extends the lock and, if it is still ours, moves the deadline.
// ErrLockLost from the store ends the hold; another error leaves it as it was.
func (h *hold) extend(ctx context.Context, most, least time.Duration, byKeepAlive bool) error {
	if err := h.checkHeld(); err != nil {
		return err
	}
	if err := h.take(ctx); err != nil {
		return err
	}
	defer h.give()
	if err := h.checkHeld(); err != nil {
		return err
	}
	sent := time.Now()
	err := h.hooks.extend(ctx, h.lock, most, least) // never waits for the executor's attempts
	if errors.Is(err, ErrLockLost) {
		h.lose(byKeepAlive)
		return err
	}

	h.mu.Lock()
	if err != nil {
		if byKeepAlive {
			h.lastErr = err
		}
		if !h.finished {
			h.emit(Event{Kind: EventExtendFailed, Err: err, KeepAlive: byKeepAlive}, sent)
		}
		h.mu.Unlock()
		return err
	}
	if h.finished || h.ended != nil {
		h.mu.Unlock()
		// The store has it, but the hold ended meanwhile: its deadline does
		// not move, so the holder must not be told the lock was extended.
		return h.checkHeld()
	}
	h.lastErr = nil
	h.most, h.least, h.sent = most, least, sent
	h.deadline = lockEnd(sent, most)
	deadline := h.deadline
	h.emit(Event{Kind: EventExtended, Until: deadline, KeepAlive: byKeepAlive}, sent)
	h.mu.Unlock()
	h.hooks.clock.watch(h, deadline) // after h.mu: the clock takes a hold's lock under its own
	return nil
}

// renew extends the lock once with what the last renewal asked for, bounded
// by attemptDeadline: a renewal hung on a dead connection is abandoned while
// there is time to retry on another.
func (h *hold) renew(ctx context.Context) error {
	h.mu.Lock()
	most, least, deadline := h.most, h.least, h.deadline
	h.mu.Unlock()
	actx, cancel := context.WithDeadline(ctx, attemptDeadline(time.Now(), deadline))
	defer cancel()
	return h.extend(actx, most, least, true)
}

// keepAliveInterval is how long keep-alive waits after an extension before the
// next one: a third of LockAtMostFor, so that a lock taken away is noticed within
// about a third of it, and a failed Extend leaves two thirds for retries.
func keepAliveInterval(mostFor time.Duration) time.Duration {
	return max(mostFor/3, time.Millisecond)
}

// keepAliveRetry is the first wait after a failed Extend; it doubles with each
// failure, up to the interval.
func keepAliveRetry(mostFor time.Duration) time.Duration {
	return max(keepAliveInterval(mostFor)/10, time.Millisecond)
}

// startKeepAlive extends the lock in the background until finish. Its Extends
// run on a context of their own, carrying the caller's values but not its
// cancellation: the lock must be kept while the task runs, even a task that has
// been told to stop and is finishing.
func (h *hold) startKeepAlive() {
	ctx, stop := context.WithCancel(context.WithoutCancel(h.parent))
	h.keepAliveStop, h.keepAliveDone = stop, make(chan struct{})
	go h.keepAliveLoop(ctx)
}

func (h *hold) keepAliveLoop(ctx context.Context) {
	defer close(h.keepAliveDone)
	h.mu.Lock()
	most := h.most
	h.mu.Unlock()
	wait, retry := keepAliveInterval(most), keepAliveRetry(most)
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := h.renew(ctx)
		h.mu.Lock()
		most = h.most
		h.mu.Unlock()
		switch {
		case err == nil:
			wait, retry = keepAliveInterval(most), keepAliveRetry(most)
		case errors.Is(err, ErrLockLost) || h.lostCause() != nil || ctx.Err() != nil:
			return
		default:
			h.hooks.log.WarnContext(h.parent, "shedlock: keep-alive could not extend the lock; retrying while it has time",
				"lock", h.cfg.Name, "retry_in", retry, "error", err)
			wait = retry
			retry = min(2*retry, keepAliveInterval(most))
		}
		t.Reset(wait)
	}
}

// attemptDeadline bounds one Extend to half the time the lock has left
// (at least keepAliveMinAttempt), so that an Extend hung on a connection that
// died silently is abandoned while there is time to retry on another.
func attemptDeadline(now, deadline time.Time) time.Time {
	if d := now.Add(max(deadline.Sub(now)/2, keepAliveMinAttempt)); d.Before(deadline) {
		return d
	}
	return deadline
}

// keepAliveMinAttempt is the least time one Extend is given.
const keepAliveMinAttempt = 50 * time.Millisecond
