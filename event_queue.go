package shedlock

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// eventQueueLimit bounds the events waiting for listeners that fall behind.
const eventQueueLimit = 4096

// eventQueue delivers events to listeners from a goroutine of its own, so that
// no listener runs on a goroutine that holds a lock. The goroutine exists only
// while events wait: an idle executor has none, and one never stopped leaks none.
type eventQueue struct {
	listeners []Listener
	log       *slog.Logger
	limit     int

	mu      sync.Mutex
	queue   []queuedEvent // waiting from head on
	head    int
	dropped uint64
	drained chan struct{} // non-nil while the goroutine runs; closed when it ends
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

// push queues ev without blocking, dropping it when the queue is full.
func (q *eventQueue) push(ctx context.Context, ev Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue)-q.head >= q.limit {
		q.dropped++
		return
	}
	q.queue = append(q.queue, queuedEvent{ctx, ev})
	if q.drained == nil {
		q.drained = make(chan struct{})
		go q.deliver(q.drained)
	}
}

func (q *eventQueue) deliver(drained chan struct{}) {
	for {
		q.mu.Lock()
		if q.head == len(q.queue) {
			q.queue, q.head = q.queue[:0], 0
			if cap(q.queue) > 64 {
				q.queue = nil // let a burst's backing array go; keep a small one
			}
			q.drained = nil
			q.mu.Unlock()
			close(drained)
			return
		}
		next := q.queue[q.head]
		q.queue[q.head] = queuedEvent{}
		q.head++
		if q.head >= 1024 && 2*q.head >= len(q.queue) { // a queue never empty must not grow
			n := copy(q.queue, q.queue[q.head:])
			clear(q.queue[n:])
			q.queue, q.head = q.queue[:n], 0
		}
		dropped := q.dropped
		q.dropped = 0
		q.mu.Unlock()

		if dropped > 0 {
			q.log.Warn("shedlock: listeners fell behind; events dropped", "dropped", dropped)
			q.send(next.ctx, Event{Kind: EventDropped, Time: time.Now(), Dropped: dropped})
		}
		q.send(next.ctx, next.ev)
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
