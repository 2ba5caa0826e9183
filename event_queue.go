package shedlock

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

const (
	// eventQueueLimit bounds the events waiting for listeners that fall behind,
	// but for the rest of runs already admitted.
	eventQueueLimit = 4096
	// runEvents is how many events a run makes when all goes well (attempt,
	// acquired, finished, released): a run is admitted only if they fit.
	runEvents = 4
	// droppedRunsLimit bounds the runs remembered as dropped. A run leaves the
	// set at its last event; only one that never makes it (its provider
	// panicked) stays, and the oldest goes first.
	droppedRunsLimit = 1 << 14
)

// eventQueue delivers events to listeners from a goroutine of its own, so that
// no listener runs on a goroutine that holds a lock. The goroutine exists only
// while events wait: an idle executor has none, and one never stopped leaks none.
//
// When listeners fall behind, it drops whole runs, never part of one, so that
// what listeners build from a run's events (a gauge of runs in progress, a
// span) is never left half done: a run whose first event finds the queue full
// is dropped with all its later events, and the events of a run already
// admitted are always queued. The queue can so pass its limit by what the runs
// in flight have left to say: a few events each, and their extensions.
type eventQueue struct {
	listeners []Listener
	log       *slog.Logger
	limit     int

	mu          sync.Mutex
	queue       []queuedEvent // waiting from head on
	head        int
	dropped     uint64             // events dropped since the last EventDropped
	droppedRuns map[RunID]struct{} // runs dropped whose last event has not come yet
	drained     chan struct{}      // non-nil while the goroutine runs; closed when it ends
}

type queuedEvent struct {
	ctx context.Context
	ev  Event
}

func newEventQueue(listeners []Listener, log *slog.Logger) *eventQueue {
	if len(listeners) == 0 {
		return nil
	}
	return &eventQueue{listeners: listeners, log: log, limit: eventQueueLimit}
}

// push queues ev without blocking, or drops it (see eventQueue).
func (q *eventQueue) push(ctx context.Context, ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.drop(ev) {
		q.dropped++ // the goroutine reports it, as soon as it is not behind
	} else {
		q.queue = append(q.queue, queuedEvent{ctx, ev})
	}
	if q.drained == nil {
		q.drained = make(chan struct{})
		go q.deliver(q.drained)
	}
}

// drop reports whether ev goes: a run is admitted or dropped at its first
// event, and all its later events follow that verdict. Called with q.mu held.
func (q *eventQueue) drop(ev Event) bool {
	if ev.Kind == EventAttempt {
		if q.limit-(len(q.queue)-q.head) >= runEvents {
			return false
		}
		q.rememberDropped(ev.Run)
		return true
	}
	if _, ok := q.droppedRuns[ev.Run]; !ok {
		return false
	}
	if lastOfRun(ev.Kind) {
		delete(q.droppedRuns, ev.Run)
	}
	return true
}

func (q *eventQueue) rememberDropped(run RunID) {
	if q.droppedRuns == nil {
		q.droppedRuns = make(map[RunID]struct{})
	}
	if len(q.droppedRuns) >= droppedRunsLimit {
		oldest := run
		for r := range q.droppedRuns {
			if r.n < oldest.n {
				oldest = r
			}
		}
		delete(q.droppedRuns, oldest)
	}
	q.droppedRuns[run] = struct{}{}
}

// lastOfRun reports whether an event of kind k ends its run (see Event).
func lastOfRun(k EventKind) bool {
	switch k {
	case EventSkipped, EventStoreError, EventReleased, EventReleaseFailed:
		return true
	}
	return false
}

func (q *eventQueue) deliver(drained chan struct{}) {
	for {
		q.mu.Lock()
		dropped := q.dropped
		q.dropped = 0
		if q.head == len(q.queue) && dropped == 0 {
			q.queue, q.head = q.queue[:0], 0
			if cap(q.queue) > 64 {
				q.queue = nil // let a burst's backing array go; keep a small one
			}
			q.drained = nil
			q.mu.Unlock()
			close(drained)
			return
		}
		var next queuedEvent
		waiting := q.head < len(q.queue)
		if waiting {
			next = q.queue[q.head]
			q.queue[q.head] = queuedEvent{}
			q.head++
			if q.head >= 1024 && 2*q.head >= len(q.queue) { // a queue never empty must not grow
				n := copy(q.queue, q.queue[q.head:])
				clear(q.queue[n:])
				q.queue, q.head = q.queue[:n], 0
			}
		}
		q.mu.Unlock()

		if dropped > 0 { // before the next event, or as the last when the queue has emptied
			ctx := next.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			q.log.Warn("shedlock: listeners fell behind; events dropped", "dropped", dropped)
			q.send(ctx, Event{Kind: EventDropped, Time: time.Now(), Dropped: dropped})
		}
		if waiting {
			q.send(next.ctx, next.ev)
		}
	}
}

func (q *eventQueue) send(ctx context.Context, ev Event) {
	for _, l := range q.listeners {
		q.sendOne(ctx, l, ev)
	}
}

func (q *eventQueue) sendOne(ctx context.Context, l Listener, ev Event) {
	defer func() {
		if r := recover(); r != nil {
			q.log.Error("shedlock: listener panicked; the event is lost to it",
				"lock", ev.Config.Name, "event", ev.Kind.String(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	l.OnEvent(ctx, ev)
}

// wait returns once every queued event has been delivered, or ctx has ended.
func (q *eventQueue) wait(ctx context.Context) {
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
