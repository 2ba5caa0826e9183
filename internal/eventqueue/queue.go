// Package eventqueue delivers an executor's events to its listeners from a
// goroutine of its own, so that no listener runs on a goroutine that holds a
// lock. The goroutine exists only while events wait: an idle executor has
// none, and one never stopped leaks none.
//
// When listeners fall behind, the queue drops whole runs, never part of one,
// so that what listeners build from a run's events (a gauge of runs in
// progress, a span) is never left half done: a run whose first event finds the
// queue full is dropped with all its later events, and the events of a run
// already admitted are always queued. The queue can so pass its limit by what
// the runs in flight have left to say: a few events each, and their extensions.
package eventqueue

import (
	"context"
	"sync"
)

const (
	// Limit bounds the events waiting for listeners that fall behind, but for
	// the rest of runs already admitted.
	Limit = 4096
	// runEvents is how many events a run makes when all goes well (attempt,
	// acquired, finished, released): a run is admitted only if they fit.
	runEvents = 4
	// droppedRunsLimit bounds the runs remembered as dropped. A run leaves the
	// set at its last event; only one that never makes it (its provider
	// panicked) stays, and the oldest goes first.
	droppedRunsLimit = 1 << 14
)

// Place is where an event stands in its run.
type Place uint8

const (
	// Within is an event between its run's first and last.
	Within Place = iota
	// First opens a run: the run is admitted or dropped on it.
	First
	// Last ends a run.
	Last
)

// Queue holds events of type E on their way to the listeners. A nil *Queue
// has no listeners: Wait returns at once.
type Queue[E any] struct {
	place   func(E) (run uint64, p Place)
	send    func(context.Context, E)      // to every listener
	dropped func(context.Context, uint64) // tells the listeners how many were dropped
	limit   int

	mu          sync.Mutex
	queue       []queued[E] // waiting from head on
	head        int
	lost        uint64              // events dropped since the last report
	droppedRuns map[uint64]struct{} // runs dropped whose last event has not come yet
	drained     chan struct{}       // non-nil while the goroutine runs; closed when it ends
}

type queued[E any] struct {
	ctx context.Context
	ev  E
}

// New returns a queue that hands each event to send. place tells an event's
// run and its place in it; dropped reports drops, before the next event sent
// or, when none comes, once the queue has emptied.
func New[E any](place func(E) (uint64, Place), send func(context.Context, E), dropped func(context.Context, uint64)) *Queue[E] {
	return &Queue[E]{place: place, send: send, dropped: dropped, limit: Limit}
}

// Push queues ev without blocking, or drops it (see the package doc).
func (q *Queue[E]) Push(ctx context.Context, ev E) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.drop(ev) {
		q.lost++ // the goroutine reports it, as soon as it is not behind
	} else {
		q.queue = append(q.queue, queued[E]{ctx, ev})
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
		go q.deliver(q.drained)
	}
}

// drop reports whether ev goes: a run is admitted or dropped at its first
// event, and all its later events follow that verdict. Called with q.mu held.
func (q *Queue[E]) drop(ev E) bool {
	run, p := q.place(ev)
	if p == First {
		if q.limit-(len(q.queue)-q.head) >= runEvents {
			return false
		}
		q.rememberDropped(run)
		return true
	}
	if _, ok := q.droppedRuns[run]; !ok {
		return false
	}
	if p == Last {
		delete(q.droppedRuns, run)
	}
	return true
}

func (q *Queue[E]) rememberDropped(run uint64) {
	if q.droppedRuns == nil {
		q.droppedRuns = make(map[uint64]struct{})
	}
	if len(q.droppedRuns) >= droppedRunsLimit {
		oldest := run
		for r := range q.droppedRuns {
			oldest = min(oldest, r)
		}
		delete(q.droppedRuns, oldest)
	}
	q.droppedRuns[run] = struct{}{}
}

func (q *Queue[E]) deliver(drained chan struct{}) {
	for {
		q.mu.Lock()
		lost := q.lost
		q.lost = 0
		if q.head == len(q.queue) && lost == 0 {
			q.queue, q.head = q.queue[:0], 0
			if cap(q.queue) > 64 {
				q.queue = nil // let a burst's backing array go; keep a small one
			}
			q.drained = nil
			q.mu.Unlock()
			close(drained)
			return
		}
		var next queued[E]
		waiting := q.head < len(q.queue)
		if waiting {
			next = q.queue[q.head]
			q.queue[q.head] = queued[E]{}
			q.head++
			if q.head >= 1024 && 2*q.head >= len(q.queue) { // a queue never empty must not grow
				n := copy(q.queue, q.queue[q.head:])
				clear(q.queue[n:])
				q.queue, q.head = q.queue[:n], 0
			}
		}
		q.mu.Unlock()

		if lost > 0 { // before the next event, or as the last when the queue has emptied
			ctx := next.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			q.dropped(ctx, lost)
		}
		if waiting {
			q.send(next.ctx, next.ev)
		}
	}
}

// Wait returns once every queued event has been delivered, or ctx has ended.
func (q *Queue[E]) Wait(ctx context.Context) {
	if q == nil {
		return
	}
	q.mu.Lock()
	drained := q.drained
	q.mu.Unlock()
	if drained == nil {
		return
	}
	select {
	case <-drained:
	case <-ctx.Done():
	}
}
