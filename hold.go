package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockend"
)

// hold is a held lock's life, for a job's run and a Leader's term alike: the
// end a margin before the store's (lockEnd), its renewals (one Extend at a
// time, each moving the end), the cause it was lost for, and the context that
// ends with it (hold_context.go). A run's hold is its task's context; a term's
// is the leadership's context.
//
// Its context can end in two ways. stop (a caller's or Stop's cancellation)
// ends the context while the lock is still held: renewals go on until finish,
// so that a task or job winding down keeps its lock. The lock ending (its end
// passed unrenewed: expire; an Extend refused: lose) ends the hold for good,
// once, with the cause the owner's ended hook reports. Waiting needs no timer
// of its own: the owner's holdClock ends the hold once its deadline passes.
type hold struct {
	parent      context.Context // the caller's context
	inner       context.Context // WithCancelCause(parent): ended with the cause
	cancel      context.CancelCauseFunc
	outer       context.Context // WithCancel(inner): its Done is the hold's
	cancelOuter context.CancelFunc
	expired     atomic.Bool // the deadline passed: Err is DeadlineExceeded
	hooks       *holdHooks
	lock        Lock
	view        Lock // what LockFromContext gives the holder
	cfg         LockConfig
	run         RunID
	renewed     bool // renewed in the background (keep-alive, a term): running out is a loss

	mu          sync.Mutex
	sent        time.Time     // when the last acquisition or Extend that succeeded was sent
	deadline    time.Time     // when the context ends unless the lock is extended
	most, least time.Duration // what the next renewal asks for
	ended       error         // why the lock can no longer be relied on: lost or expired; nil while it holds
	refused     bool          // ended by a refused Extend: the lock is another's, nothing to release
	finished    bool          // the holder is done with it; nothing changes after
	lastErr     error         // the last failed renewal, for the cause if time runs out
	turn        chan struct{} // one Extend at a time; made by the first

	keepAliveStop context.CancelFunc // ends keep-alive and its Extend under way
	keepAliveDone chan struct{}      // closed when keep-alive has ended
}

// holdHooks is what a hold needs of its owner (an executor, a Leader): made
// once per owner, since each method value is an allocation.
type holdHooks struct {
	log  *slog.Logger
	noun string // "lock" or "leader", for causes
	// emit hands an event of the hold to the listeners; nil for none.
	emit func(ctx context.Context, ev Event, from time.Time)
	// ended tells the owner that the lock ended (EventLost or EventExpired)
	// with cause, before the context ends. The hold's mu is held.
	ended func(h *hold, kind EventKind, cause error, byKeepAlive bool)
	// finished tells the owner that the holder is done with the lock; may be nil.
	finished func(*hold)
	// extend extends the lock, within the owner's bound.
	extend func(ctx context.Context, lock Lock, most, least time.Duration) error
	// clock ends the owner's holds at their deadlines.
	clock *holdClock
}

// lockEnd is when a lock whose LockAtMostFor mostFor was asked for at sent
// ends for its holder: lockend.Margin before the store's end.
func lockEnd(sent time.Time, mostFor time.Duration) time.Time { return lockend.At(sent, mostFor) }

// newHold starts holding lock, taken with a statement sent at sent. The
// caller sets view, the lock the holder sees, and starts keep-alive if
// wanted (startKeepAlive).
func newHold(ctx context.Context, cfg LockConfig, lock Lock, sent time.Time, renewed bool, run RunID, hooks *holdHooks) *hold {
	h := &hold{parent: ctx, hooks: hooks, lock: lock, cfg: cfg, run: run, renewed: renewed,
		most: cfg.LockAtMostFor, least: cfg.LockAtLeastFor, sent: sent}
	h.inner, h.cancel = context.WithCancelCause(ctx)
	h.outer, h.cancelOuter = context.WithCancel(h.inner)
	h.deadline = lockEnd(sent, cfg.LockAtMostFor)
	return h
}

// watch starts the clock on the hold; its owner calls it once it has
// reported the hold, so that nothing ends it before.
func (h *hold) watch() { h.hooks.clock.watch(h, h.until()) }

// emit hands one of the hold's events to the listeners, if any.
func (h *hold) emit(ev Event, from time.Time) {
	if h.hooks.emit != nil {
		ev.Run, ev.Config = h.run, h.cfg
		h.hooks.emit(h.parent, ev, from)
	}
}

// until is when the hold's context ends unless the lock is extended.
func (h *hold) until() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline
}

// lastSent is when the last acquisition or Extend that succeeded was sent.
func (h *hold) lastSent() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sent
}

// clockState is what the clock needs: the deadline, and whether the hold
// still holds (live), so that it may have to end it.
func (h *hold) clockState() (deadline time.Time, live bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.deadline, !h.finished && h.ended == nil
}

// stop ends the context with cause while the lock is still held: renewals go
// on until finish.
func (h *hold) stop(cause error) { h.cancel(cause) }

// expire ends the hold when its deadline passes; a deadline moved since the
// clock looked is watched again instead.
func (h *hold) expire() {
	h.mu.Lock()
	if h.finished || h.ended != nil {
		h.mu.Unlock()
		return
	}
	if deadline := h.deadline; time.Until(deadline) > 0 {
		h.mu.Unlock()
		h.hooks.clock.watch(h, deadline)
		return
	}
	defer h.mu.Unlock()
	kind, cause := EventExpired, ErrLockExpired
	if h.renewed {
		kind = EventLost
		cause = fmt.Errorf("%w: %s %q could not be renewed before its LockAtMostFor ran out", ErrLockLost, h.hooks.noun, h.cfg.Name)
		if h.lastErr != nil {
			cause = fmt.Errorf("%w: %w", cause, h.lastErr)
		}
	}
	if h.inner.Err() == nil {
		h.expired.Store(true)
	}
	h.endLocked(kind, cause, h.renewed)
}

// expireIfDue ends the hold at once if its deadline has passed, without
// waiting for the clock: a process resumed after a pause runs its goroutines
// before its timers, and a check made then must not find the lock held.
func (h *hold) expireIfDue() {
	if !time.Now().Before(h.until()) {
		h.expire()
	}
}

// lose ends the hold because an Extend found the lock no longer ours.
func (h *hold) lose(byKeepAlive bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.finished || h.ended != nil {
		return
	}
	h.refused = true
	h.endLocked(EventLost, fmt.Errorf("%w: %s %q: an Extend was refused", ErrLockLost, h.hooks.noun, h.cfg.Name), byKeepAlive)
}

// endLocked ends the hold with cause. The owner hears of it before the
// context ends, so that no listener sees what the end caused before the loss.
// h.mu must be held.
func (h *hold) endLocked(kind EventKind, cause error, byKeepAlive bool) {
	h.ended = cause
	h.hooks.ended(h, kind, cause, byKeepAlive)
	h.cancel(cause)
}

// finish ends the hold once its holder is done with the lock: keep-alive
// stops (its Extend under way is cancelled) before the lock is released, and
// nothing moves after.
func (h *hold) finish() {
	h.mu.Lock()
	h.finished = true
	h.mu.Unlock()
	h.hooks.clock.forget(h)
	if h.keepAliveStop != nil {
		h.keepAliveStop()
		<-h.keepAliveDone
	}
	if h.hooks.finished != nil {
		h.hooks.finished(h)
	}
	h.cancel(nil)
	h.cancelOuter()
}

// lostCause reports why the lock can no longer be relied on: the cause the
// hold ended with, or that the holder is done with it; nil while it holds.
func (h *hold) lostCause() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.ended != nil:
		return h.ended
	case h.finished:
		return errors.New("shedlock: the holder is done with the lock, and released it")
	}
	return nil
}

// gone reports whether a refused Extend found the lock another's: then there
// is nothing to release.
func (h *hold) gone() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refused
}

// holdClock ends its owner's holds (an executor's runs, a Leader's terms) when
// their deadlines pass, on one timer
// for all of them. A timer of each run's own costs more than its allocation:
// armed on a processor with no earlier timer, it wakes an idle thread of the
// runtime to watch it, which on a short run cost more than the rest of the
// executor's own work together (docs/performance.md). Here a run's hold arms
// the timer only when its deadline comes before the one it is armed for: in
// steady state, one run after another on the same LockAtMostFor, not at all.
//
// The timer is armed for the earliest deadline of the holds it holds (or an
// earlier one, whose hold has since finished or moved on): when it fires it
// ends the holds that are due and re-arms for the earliest of the others, so
// that each hold still ends when its own deadline passes.
type holdClock struct {
	mu    sync.Mutex
	holds map[*hold]struct{} // holds not yet due, nor finished when last seen
	timer *time.Timer        // made at the first arming
	at    time.Time          // when timer fires; zero while it is not armed
}

func newHoldClock() *holdClock { return &holdClock{holds: make(map[*hold]struct{})} }

// watch ends h once deadline, its current one, has passed; again after each
// move of its deadline (Extend), with the new one. h.mu must not be held.
func (c *holdClock) watch(h *hold, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds[h] = struct{}{}
	if !c.at.IsZero() && !deadline.Before(c.at) {
		return // the timer fires sooner, and will re-arm for h
	}
	c.armLocked(deadline)
}

// forget stops watching h, whose task has returned. The timer stays armed: when
// it fires it finds nothing due and re-arms for the holds left, if any.
func (c *holdClock) forget(h *hold) {
	c.mu.Lock()
	delete(c.holds, h)
	c.mu.Unlock()
}

// armLocked makes the timer fire at t. c.mu must be held.
func (c *holdClock) armLocked(t time.Time) {
	c.at = t
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(t), c.fire)
		return
	}
	c.timer.Reset(time.Until(t))
}

// fire ends the holds whose deadline has passed and re-arms for the earliest
// of the others. A hold's deadline is read under its own lock, after c.mu:
// nothing takes c.mu while holding a hold's.
func (c *holdClock) fire() {
	c.mu.Lock()
	c.at = time.Time{}
	now := time.Now()
	var due []*hold
	var next time.Time
	for h := range c.holds {
		deadline, live := h.clockState()
		switch {
		case !live:
			delete(c.holds, h)
		case !deadline.After(now):
			delete(c.holds, h)
			due = append(due, h)
		case next.IsZero() || deadline.Before(next):
			next = deadline
		}
	}
	if !next.IsZero() {
		c.armLocked(next)
	}
	c.mu.Unlock()
	for _, h := range due {
		h.expire()
	}
}
