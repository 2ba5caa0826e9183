package shedlock

import (
	"sync"
	"time"
)

// leaseClock ends an executor's leases when their deadlines pass, on one timer
// for all of them. A timer of each run's own costs more than its allocation:
// armed on a processor with no earlier timer, it wakes an idle thread of the
// runtime to watch it, which on a short run cost more than the rest of the
// executor's own work together (docs/performance.md). Here a run's lease arms
// the timer only when its deadline comes before the one it is armed for: in
// steady state, one run after another on the same LockAtMostFor, not at all.
//
// The timer is armed for the earliest deadline of the leases it holds (or an
// earlier one, whose lease has since finished or moved on): when it fires it
// ends the leases that are due and re-arms for the earliest of the others, so
// that each lease still ends when its own deadline passes.
type leaseClock struct {
	mu     sync.Mutex
	leases map[*lease]struct{} // leases not yet due, nor finished when last seen
	timer  *time.Timer         // made at the first arming
	at     time.Time           // when timer fires; zero while it is not armed
}

func newLeaseClock() *leaseClock { return &leaseClock{leases: make(map[*lease]struct{})} }

// watch ends l once deadline, its current one, has passed; again after each
// move of its deadline (Extend), with the new one. l.mu must not be held.
func (c *leaseClock) watch(l *lease, deadline time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leases[l] = struct{}{}
	if !c.at.IsZero() && !deadline.Before(c.at) {
		return // the timer fires sooner, and will re-arm for l
	}
	c.armLocked(deadline)
}

// forget stops watching l, whose task has returned. The timer stays armed: when
// it fires it finds nothing due and re-arms for the leases left, if any.
func (c *leaseClock) forget(l *lease) {
	c.mu.Lock()
	delete(c.leases, l)
	c.mu.Unlock()
}

// armLocked makes the timer fire at t. c.mu must be held.
func (c *leaseClock) armLocked(t time.Time) {
	c.at = t
	if c.timer == nil {
		c.timer = time.AfterFunc(time.Until(t), c.fire)
		return
	}
	c.timer.Reset(time.Until(t))
}

// fire ends the leases whose deadline has passed and re-arms for the earliest
// of the others. A lease's deadline is read under its own lock, after c.mu:
// nothing takes c.mu while holding a lease's.
func (c *leaseClock) fire() {
	c.mu.Lock()
	c.at = time.Time{}
	now := time.Now()
	var due []*lease
	var next time.Time
	for l := range c.leases {
		deadline, live := l.clockState()
		switch {
		case !live:
			delete(c.leases, l)
		case !deadline.After(now):
			delete(c.leases, l)
			due = append(due, l)
		case next.IsZero() || deadline.Before(next):
			next = deadline
		}
	}
	if !next.IsZero() {
		c.armLocked(next)
	}
	c.mu.Unlock()
	for _, l := range due {
		l.expire()
	}
}
