package shedlock

import (
	"sync"
	"time"
)

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
