// Package inflight bounds the lock attempts an executor has in flight, so that
// a pod's herd of attempts at one tick stays within its connection pool, and
// sends the attempts that queue together, a batch to a statement.
package inflight

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrLate is returned by Acquire when an attempt's wait reaches its end: the
// window of its fire time has passed.
var ErrLate = errors.New("shedlock: the attempt came after its fire time's window")

// Kind is what an attempt is; it decides its place among those waiting.
type Kind int

const (
	// Attempt is an attempt to take a lock.
	Attempt Kind = iota
	// WonLast is an attempt on a name whose last attempt here took the lock.
	WonLast
	// Alone is an attempt that never goes in a batch, nor carries one: a
	// CatchUp run's attempt for its fire time. It counts among the attempts,
	// so that however many hang, the places of releases and extensions stay
	// theirs.
	Alone
	kinds
)

// Slots bounds statements in flight to Size, attempts among them to Limit
// (less than Size), and hands the attempts that wait
// for one to the next attempt that gets one, up to Batch together.
//
// Releases and extensions of locks held (AcquireHeld) never wait for an
// attempt: attempts of every kind leave at least Size-Limit places free for
// them, and they go first when places free.
//
// Who goes first: attempts on names this executor took at their last attempt
// (WonLast), then the others, each kind in the order of their keys on a ring
// that starts at a place of this instance's own (Start). At a herd's tick
// every pod has an attempt waiting for each job. With the last winner's
// attempts first, each job that ran before is tried early by some pod; with
// each pod going round the ring from its own start, the pods' first batches
// are mostly different jobs, so that each job is tried early on the first
// tick too. Won-last attempts go first from the queue, but the others do not
// wait for those in flight while a slot is free: a won-last attempt may hang
// on a row another transaction holds, which is its job's problem alone.
// No pod learns from another, and the lock, not the order, decides who runs.
type Slots[T any] struct {
	// Size is how many statements may be in flight at once.
	Size int
	// Limit is how many attempts may be in flight at once.
	Limit int
	// Batch is the most attempts one grant carries, its own included.
	Batch int
	// Start is this instance's place on the ring of keys.
	Start uint64

	mu      sync.Mutex
	used    [kinds]int // attempts in flight, by kind
	held    int        // releases and extensions in flight
	heldQ   []*heldWaiter
	dones   [kinds + 1]func() // what gives back a slot of each kind, and a held one: made once
	waiting [kinds][]*waiter[T]
	sorted  [kinds]bool // waiting[k] is in ring order
}

type waiter[T any] struct {
	v      T
	key    uint64 // the attempt's place on the ring
	state  state
	riders []T // for a leader: the attempts it sends with its own
	ready  chan struct{}
}

type state int

const (
	waiting state = iota
	leading       // holds a slot, and sends riders with its own attempt
	riding        // sent by a leader; holds no slot
)

// Grant is what Acquire gave an attempt: a slot of its own, from which it
// sends its attempt and Riders' together, or a seat in another attempt's
// batch (Rider), whose leader reports its result.
type Grant[T any] struct {
	Riders []T
	Rider  bool
	done   func()
}

// Done gives the grant's slot back; a rider has none.
func (g Grant[T]) Done() {
	if g.done != nil {
		g.done()
	}
}

// New returns slots for size statements in flight, limit attempts among
// them, batch attempts at most to a grant (1: each attempt alone), going round
// the ring of keys from start. size is raised to limit+1 where it is not
// above it: a release or an extension always has a place.
func New[T any](size, limit, batch int, start uint64) *Slots[T] {
	limit = max(limit, 1)
	s := &Slots[T]{Size: max(size, limit+1), Limit: limit, Batch: max(batch, 1), Start: start}
	s.dones = [kinds + 1]func(){WonLast: s.doneWonLast, Attempt: s.doneAttempt, Alone: s.doneAlone, kinds: s.doneHeld}
	return s
}

// TryAcquire takes a slot for an attempt of kind k if it may go at once and
// alone (see Acquire), without waiting: the caller then builds no attempt to
// queue.
func (s *Slots[T]) TryAcquire(k Kind) (Grant[T], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.queued() && s.free() {
		s.used[k]++
		return Grant[T]{done: s.doneFor(k)}, true
	}
	return Grant[T]{}, false
}

// Acquire waits for a slot for attempt v of kind k, whose place on the ring is
// key. An attempt that finds a
// slot free and nobody waiting goes at once and alone: a lone job pays nothing
// for batching. The wait ends with ctx, with ErrLate at end, or with
// context.DeadlineExceeded at deadline; a zero end or deadline is none. Once
// granted, a leader must send every rider's attempt and call Done after; a
// rider must wait for its leader's word.
func (s *Slots[T]) Acquire(ctx context.Context, k Kind, v T, key uint64, end, deadline time.Time) (Grant[T], error) {
	s.mu.Lock()
	if !s.queued() && s.free() {
		s.used[k]++
		s.mu.Unlock()
		return Grant[T]{done: s.doneFor(k)}, nil
	}
	w := &waiter[T]{v: v, key: key - s.Start, ready: make(chan struct{})}
	s.waiting[k] = append(s.waiting[k], w)
	s.sorted[k] = false
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
	case <-ctx.Done():
		cause = context.Cause(ctx)
	case <-timeout:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch w.state {
	case leading:
		return Grant[T]{Riders: w.riders, done: s.doneFor(k)}, nil
	case riding:
		return Grant[T]{Rider: true}, nil
	}
	s.waiting[k] = remove(s.waiting[k], w)
	return Grant[T]{}, cause
}

// free reports whether an attempt may go now: a slot is free, and no
// release or extension waits for one. s.mu must be held.
func (s *Slots[T]) free() bool {
	attempts := s.attempts()
	return attempts < s.Limit && attempts+s.held < s.Size && len(s.heldQ) == 0
}

// attempts counts the attempts in flight, of every kind. s.mu must be held.
func (s *Slots[T]) attempts() int { return s.used[WonLast] + s.used[Attempt] + s.used[Alone] }

// doneFor returns what gives a slot of kind k back.
func (s *Slots[T]) doneFor(k Kind) func() { return s.dones[k] }

func (s *Slots[T]) doneWonLast() { s.giveBack(WonLast) }
func (s *Slots[T]) doneAttempt() { s.giveBack(Attempt) }
func (s *Slots[T]) doneAlone()   { s.giveBack(Alone) }

// queued reports whether an attempt waits. s.mu must be held.
func (s *Slots[T]) queued() bool {
	return len(s.waiting[WonLast])+len(s.waiting[Attempt])+len(s.waiting[Alone]) > 0
}

// giveBack returns a slot of kind k, and hands the free slots to the
// waiting attempts: each to the next one, with up to Batch-1 more of its kind
// riding with it. A batch of attempts on names won last is not held up by
// attempts that other instances are taking at the same time.
func (s *Slots[T]) giveBack(k Kind) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used[k]--
	s.dispatch()
}

// dispatch hands the free places to waiting releases and extensions first,
// then to waiting attempts. s.mu must be held.
func (s *Slots[T]) dispatch() {
	for len(s.heldQ) > 0 && s.attempts()+s.held < s.Size {
		w := s.heldQ[0]
		s.heldQ = s.heldQ[1:]
		s.held++
		w.granted = true
		close(w.ready)
	}
	for {
		lead, k := s.next()
		if lead == nil {
			return
		}
		s.used[k]++
		lead.state = leading
		for k != Alone && len(lead.riders) < s.Batch-1 && len(s.waiting[k]) > 0 {
			w := s.take(k)
			w.state = riding
			lead.riders = append(lead.riders, w.v)
			close(w.ready)
		}
		close(lead.ready)
	}
}

// next takes the waiter to go next, if one may, and tells its kind. s.mu
// must be held.
func (s *Slots[T]) next() (*waiter[T], Kind) {
	for _, k := range [...]Kind{WonLast, Alone, Attempt} {
		if len(s.waiting[k]) > 0 && s.free() {
			return s.take(k), k
		}
	}
	return nil, 0
}

// take takes the first waiter of kind k on the ring. s.mu must be held.
func (s *Slots[T]) take(k Kind) *waiter[T] {
	q := s.waiting[k]
	if !s.sorted[k] { // once per batch at most: attempts queue between batches
		slices.SortFunc(q, func(a, b *waiter[T]) int { return cmp.Compare(a.key, b.key) })
		s.sorted[k] = true
	}
	w := q[0]
	q[0] = nil
	s.waiting[k] = q[1:]
	return w
}

func remove[T any](q []*waiter[T], w *waiter[T]) []*waiter[T] {
	if i := slices.Index(q, w); i >= 0 {
		return slices.Delete(q, i, i+1) // keeps the ring order
	}
	return q
}

// Waiting reports how many attempts wait for a slot, of kind Attempt or
// Alone, and of kind WonLast.
func (s *Slots[T]) Waiting() (attempts, wonLast int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting[Attempt]) + len(s.waiting[Alone]), len(s.waiting[WonLast])
}

type heldWaiter struct {
	granted bool
	ready   chan struct{}
}

// AcquireHeld waits for a place for a release or an extension, never behind
// an attempt, or for ctx to end, and returns what gives it back.
func (s *Slots[T]) AcquireHeld(ctx context.Context) (func(), error) {
	s.mu.Lock()
	if len(s.heldQ) == 0 && s.attempts()+s.held < s.Size {
		s.held++
		s.mu.Unlock()
		return s.dones[kinds], nil
	}
	w := &heldWaiter{ready: make(chan struct{})}
	s.heldQ = append(s.heldQ, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return s.dones[kinds], nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		s.held--
		s.dispatch()
	} else if i := slices.Index(s.heldQ, w); i >= 0 {
		s.heldQ = slices.Delete(s.heldQ, i, i+1)
		s.dispatch() // attempts may have waited behind it
	}
	return nil, context.Cause(ctx)
}

func (s *Slots[T]) doneHeld() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held--
	s.dispatch()
}
