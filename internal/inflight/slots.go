// Package inflight bounds the statements an executor has in flight, so that a
// pod's herd of attempts at one tick stays within its connection pool, and its
// releases and extensions are never starved by its own attempts.
package inflight

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// ErrLate is returned by Acquire when an attempt's wait reaches its end: the
// window of its fire time has passed.
var ErrLate = errors.New("shedlock: the attempt came after its fire time's window")

// Kind is what a statement is for; it decides the statement's place among
// those waiting for a slot.
type Kind int

const (
	// Attempt is an attempt to take a lock.
	Attempt Kind = iota
	// WonLast is an attempt on a name whose last attempt here took the lock.
	WonLast
	// Held is a release or an extension of a lock this executor holds.
	Held
	kinds
)

// Slots bounds statements in flight to Size. Releases and extensions (Held) go
// ahead of every waiting attempt, in turn; then attempts on names this executor
// took at their last attempt (WonLast), then the others. Attempts of one kind go
// in random order, as database/sql hands out connections.
//
// Why WonLast first: at a herd's tick every pod has an attempt waiting for each
// job. Were each pod's order random, a job would wait for the earliest of the
// pods' random places for it; with the last winner's attempt first, each job
// is tried within the first share of some pod's queue. No pod learns from
// another, and the lock, not the order, decides who runs.
type Slots struct {
	// Size is how many statements may be in flight at once.
	Size int

	mu      sync.Mutex
	used    int // statements in flight
	waiting [kinds][]*slotWaiter
}

type slotWaiter struct {
	granted bool
	ready   chan struct{}
}

// New returns slots for n statements in flight.
func New(n int) *Slots { return &Slots{Size: n} }

// Acquire waits for a slot for a statement of kind k, and returns the function
// that gives it back. The wait ends with ctx, with ErrLate at end, or with
// context.DeadlineExceeded at deadline; a zero end or deadline is none.
func (s *Slots) Acquire(ctx context.Context, k Kind, end, deadline time.Time) (func(), error) {
	s.mu.Lock()
	if s.used < s.Size && !s.aheadOf(k) {
		s.used++
		s.mu.Unlock()
		return s.give, nil
	}
	w := &slotWaiter{ready: make(chan struct{})}
	s.waiting[k] = append(s.waiting[k], w)
	s.mu.Unlock()
	cause := ErrLate
	if deadline.Before(end) || end.IsZero() {
		end, cause = deadline, context.DeadlineExceeded
	}
	var timeout <-chan time.Time // one timer, for waits only
	if !end.IsZero() {
		t := time.NewTimer(time.Until(end))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.ready:
		return s.give, nil
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-timeout:
	}
	s.mu.Lock()
	granted := w.granted
	if !granted {
		s.waiting[k] = slices.DeleteFunc(s.waiting[k], func(x *slotWaiter) bool { return x == w })
	}
	s.mu.Unlock()
	if granted {
		s.give()
	}
	return nil, cause
}

// aheadOf reports whether a statement of kind k, or of a kind that goes
// before k, waits. s.mu must be held.
func (s *Slots) aheadOf(k Kind) bool {
	for ; k < kinds; k++ {
		if len(s.waiting[k]) > 0 {
			return true
		}
	}
	return false
}

// give returns a slot: to the first release or extension waiting, else to a
// waiting attempt of the first kind that has one, picked at random.
func (s *Slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w *slotWaiter
	switch q := &s.waiting; {
	case len(q[Held]) > 0:
		w, q[Held] = q[Held][0], q[Held][1:]
	case len(q[WonLast]) > 0:
		w = takeRandom(&q[WonLast])
	case len(q[Attempt]) > 0:
		w = takeRandom(&q[Attempt])
	default:
		s.used--
		return
	}
	w.granted = true
	close(w.ready)
}

// takeRandom removes a waiter picked at random from q.
func takeRandom(q *[]*slotWaiter) *slotWaiter {
	i, last := rand.IntN(len(*q)), len(*q)-1
	w := (*q)[i]
	(*q)[i], (*q)[last] = (*q)[last], nil
	*q = (*q)[:last]
	return w
}

// Waiting reports how many attempts wait for a slot, of kind Attempt and of
// kind WonLast.
func (s *Slots) Waiting() (attempts, wonLast int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting[Attempt]), len(s.waiting[WonLast])
}
