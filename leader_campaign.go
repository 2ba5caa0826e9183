package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// loop campaigns while following and renews while leading, until Stop.
func (l *Leader) loop() {
	defer close(l.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-l.loopCtx.Done():
			return
		case <-t.C:
		case <-l.wake: // a term ended: campaign without waiting for the renewal's turn
		}
		if l.loopCtx.Err() != nil {
			return
		}
		l.mu.Lock()
		cur := l.term
		l.mu.Unlock()
		var wait time.Duration
		if cur != nil {
			wait = l.renew(l.loopCtx, cur.hold)
		} else {
			wait = l.campaign()
		}
		t.Reset(wait)
	}
}

// campaign tries once to take the lease, and returns how long to wait before
// the next step. The attempt is bounded by the end a term taken now would
// have: a lease that arrives later could not be acted on.
func (l *Leader) campaign() time.Duration {
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.loopCtx, lockEnd(sent, l.cfg.LockAtMostFor))
	lock, err := l.provider.TryLock(ctx, l.cfg)
	cancel()
	switch {
	case err == nil:
		l.begin(lock, sent)
		return l.opts.renew
	case errors.Is(err, ErrNotAcquired), l.loopCtx.Err() != nil:
		return l.opts.retry
	}
	l.opts.log.Warn("shedlock: leader could not campaign; retrying", "leader", l.cfg.Name,
		"retry_in", l.opts.retry, "error", err)
	return l.opts.retry
}

// begin holds lock, taken with a TryLock sent at sent, and starts a term on
// it; after Stop, or too late to act on, the hold only keeps the lock for
// Stop to release.
func (l *Leader) begin(lock Lock, sent time.Time) {
	h := newHold(context.Background(), l.cfg, lock, sent, true, RunID{}, l.hooks)
	until := h.until()
	l.mu.Lock()
	l.hold = h
	if l.stopped || !time.Now().Before(until) {
		l.mu.Unlock()
		return
	}
	t := &term{name: l.cfg.Name, id: l.seq.next(), hold: h, begun: time.Now()}
	t.fence, t.fenced = FenceOf(lock)
	h.view, h.run = leaderLock{t}, t.id
	l.term = t
	// Gained goes out before anything that could end the term.
	l.emit(Event{Kind: EventLeadershipGained, Run: t.id, Until: until, Fence: t.fence, Duration: t.begun.Sub(sent)})
	l.mu.Unlock()
	h.watch() // after l.mu: a hold's end takes l.mu under the hold's lock
	l.opts.log.Info("shedlock: leading", "leader", l.cfg.Name, "fence", t.fence, "until", until)
}

// renew extends the hold once, within ctx, and returns how long to wait
// before the next renewal: the renew period, or after a failure the retry
// period (at most the renew period) while the hold has time left. A refusal
// ends the hold (holdEnded).
func (l *Leader) renew(ctx context.Context, h *hold) time.Duration {
	err := h.renew(ctx)
	switch {
	case err == nil:
		return l.opts.renew
	case errors.Is(err, ErrLockLost), ctx.Err() != nil:
		return l.opts.retry
	}
	wait := min(l.opts.retry, l.opts.renew)
	l.opts.log.WarnContext(ctx, "shedlock: leader could not renew its lease; retrying while it has time",
		"leader", l.cfg.Name, "retry_in", wait, "error", err)
	return wait
}

// holdEnded hears that the lease ended (refused, or run out unrenewed). A
// term under way ends with it; after Stop ended the term, a loss while Stop
// waits for jobs is its outcome, since a follower may have led beside them.
// The hold's lock is held: this takes l.mu under it.
func (l *Leader) holdEnded(h *hold, _ EventKind, cause error, _ bool) {
	l.mu.Lock()
	t := l.term
	if t == nil || t.hold != h {
		if !l.stopWaits { // a Stop whose ctx ended said the lease would run out
			l.mu.Unlock()
			return
		}
		l.stopLost = fmt.Errorf("shedlock: leader %q: the lease was lost while Stop waited for jobs: %w", l.cfg.Name, cause)
		l.mu.Unlock()
		l.opts.log.Warn("shedlock: leader lost its lease while Stop waited for jobs; another may lead beside them",
			"leader", l.cfg.Name, "error", cause)
		return
	}
	l.term = nil
	l.emit(Event{Kind: EventLeadershipLost, Run: t.id, Err: cause, Fence: t.fence, Duration: time.Since(t.begun)})
	l.mu.Unlock()
	l.opts.log.Warn("shedlock: leadership lost", "leader", l.cfg.Name, "fence", t.fence, "error", cause)
	l.wakeLoop()
}

// endCurrent ends the current term, if any, with cause (Stop's): its
// context ends, while its hold keeps the lock for Stop to renew and release.
func (l *Leader) endCurrent(cause error) {
	l.mu.Lock()
	t := l.term
	l.term = nil
	if t != nil {
		l.emit(Event{Kind: EventLeadershipLost, Run: t.id, Err: cause, Fence: t.fence, Duration: time.Since(t.begun)})
	}
	l.mu.Unlock()
	if t == nil {
		return
	}
	t.hold.stop(cause)
	l.opts.log.Info("shedlock: leadership given up", "leader", l.cfg.Name, "fence", t.fence)
	l.wakeLoop()
}

func (l *Leader) wakeLoop() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}
