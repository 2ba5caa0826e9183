package shedlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// term is one taking of the lease: from TryLock until the leadership's
// context ends. Its fields after ctx are guarded by the leader's mu.
type term struct {
	l      *Leader
	id     RunID
	lock   Lock
	fence  int64
	fenced bool
	begun  time.Time
	ctx    context.Context
	cancel context.CancelCauseFunc

	until   time.Time   // when ctx ends unless renewed: a margin before the store's end
	timer   *time.Timer // fires at until
	ended   bool
	lastErr error // the last renewal's failure, for the cause if time runs out
}

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
			wait = l.renew(cur)
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

// begin starts a term on lock, taken with a TryLock sent at sent; after Stop,
// or too late to act on, it only keeps the lock for Stop to release.
func (l *Leader) begin(lock Lock, sent time.Time) {
	until := lockEnd(sent, l.cfg.LockAtMostFor)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.heldAt = lock, sent
	if l.stopped || !time.Now().Before(until) {
		return
	}
	t := &term{l: l, id: l.seq.next(), lock: lock, begun: time.Now(), until: until}
	t.fence, t.fenced = FenceOf(lock)
	ctx, cancel := context.WithCancelCause(context.Background())
	t.ctx, t.cancel = context.WithValue(ctx, lockKey{}, leaderLock{t}), cancel
	l.term = t
	// Gained goes out before anything that could end the term.
	l.emit(Event{Kind: EventLeadershipGained, Run: t.id, Until: until, Fence: t.fence, Duration: t.begun.Sub(sent)})
	t.timer = time.AfterFunc(time.Until(until), t.expire)
	l.opts.log.Info("shedlock: leading", "leader", l.cfg.Name, "fence", t.fence, "until", until)
}

// renew extends the term's lease once, and returns how long to wait before
// the next step. A refusal ends the term; another failure is retried while
// the term has time left.
func (l *Leader) renew(t *term) time.Duration {
	l.mu.Lock()
	until := t.until
	l.mu.Unlock()
	sent := time.Now()
	ctx, cancel := context.WithDeadline(l.loopCtx, attemptDeadline(sent, until))
	err := t.lock.Extend(ctx, l.cfg.LockAtMostFor, 0)
	cancel()
	switch {
	case err == nil:
		l.mu.Lock()
		if !t.ended {
			t.until, t.lastErr = lockEnd(sent, l.cfg.LockAtMostFor), nil
			l.heldAt = sent
			t.timer.Reset(time.Until(t.until))
		}
		l.mu.Unlock()
		return l.opts.renew
	case errors.Is(err, ErrLockLost):
		l.mu.Lock()
		l.held = nil // someone else's now: nothing for Stop to release
		l.mu.Unlock()
		t.end(fmt.Errorf("leader %q: renewal refused: %w", l.cfg.Name, err))
		return l.opts.retry
	case l.loopCtx.Err() != nil:
		return l.opts.retry
	}
	l.mu.Lock()
	t.lastErr = err
	l.mu.Unlock()
	wait := min(l.opts.retry, l.opts.renew)
	l.opts.log.Warn("shedlock: leader could not renew its lease; retrying while it has time",
		"leader", l.cfg.Name, "retry_in", wait, "error", err)
	return wait
}

// deadline is when the term's context ends unless the lease is renewed.
func (t *term) deadline() time.Time {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	return t.until
}

// expire ends the term once its end has come; the timer, firing early for a
// deadline moved since it was set, re-arms instead.
func (t *term) expire() {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	if t.ended {
		return
	}
	if wait := time.Until(t.until); wait > 0 {
		t.timer.Reset(wait)
		return
	}
	cause := fmt.Errorf("%w: leader %q: the lease could not be renewed before its end", ErrLockLost, t.l.cfg.Name)
	if t.lastErr != nil {
		cause = fmt.Errorf("%w: %w", cause, t.lastErr)
	}
	t.endLocked(cause)
}

// end ends the term with cause, once.
func (t *term) end(cause error) {
	t.l.mu.Lock()
	defer t.l.mu.Unlock()
	t.endLocked(cause)
}

// endLocked ends the term: the event goes out before the context ends, so
// that no listener sees what the context's end caused before the loss.
// The leader's mu must be held.
func (t *term) endLocked(cause error) {
	if t.ended {
		return
	}
	l := t.l
	t.ended = true
	t.timer.Stop()
	if l.term == t {
		l.term = nil
	}
	l.emit(Event{Kind: EventLeadershipLost, Run: t.id, Err: cause, Fence: t.fence, Duration: time.Since(t.begun)})
	t.cancel(cause)
	if errors.Is(cause, ErrStopped) {
		l.opts.log.Info("shedlock: leadership given up", "leader", l.cfg.Name, "fence", t.fence)
	} else {
		l.opts.log.Warn("shedlock: leadership lost", "leader", l.cfg.Name, "fence", t.fence, "error", cause)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// leaderLock is the term's lock as the leadership's context carries it: it
// gives the term's token and says whether the term lasts; the lease itself is
// the leader's to renew and release.
type leaderLock struct{ t *term }

func (ll leaderLock) Unlock(context.Context) error {
	return ll.refuse("the lease is released by Leader.Stop")
}

func (ll leaderLock) Extend(context.Context, time.Duration, time.Duration) error {
	return ll.refuse("the lease is renewed by the leader")
}

// refuse is the error of an Unlock or Extend, which the leader alone makes:
// errors.ErrUnsupported, as a task's lock refuses Unlock, and ErrLockLost
// too once the term has ended, as Extend's contract says of a lock no longer
// ours.
func (ll leaderLock) refuse(why string) error {
	err := fmt.Errorf("shedlock: leader %q: %s: %w", ll.t.l.cfg.Name, why, errors.ErrUnsupported)
	if held := ll.CheckHeld(); held != nil {
		err = fmt.Errorf("%w; %w", err, held)
	}
	return err
}

// Fence returns the term's fencing token.
func (ll leaderLock) Fence() (int64, bool) { return ll.t.fence, ll.t.fenced }

// CheckHeld reports the term's end, as a loss of the lease.
func (ll leaderLock) CheckHeld() error {
	if ll.t.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: leader %q: the term has ended: %w", ErrLockLost, ll.t.l.cfg.Name, context.Cause(ll.t.ctx))
}
