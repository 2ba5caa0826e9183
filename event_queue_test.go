package shedlock

import (
	"context"
	"log/slog"
	"testing"
)

// A queue that is never empty, because its listener is always a little behind,
// must not grow: delivered events' room is reused.
func TestEventQueueNeverEmptyStaysBounded(t *testing.T) {
	step := make(chan struct{})
	q := newEventQueue([]Listener{ListenerFunc(func(context.Context, Event) { <-step })}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	for range 2000 {
		q.push(ctx, Event{Kind: EventAttempt})
	}
	for range 20000 {
		step <- struct{}{} // one event delivered
		q.push(ctx, Event{Kind: EventAttempt})
	}
	q.mu.Lock()
	waiting, length, capacity, dropped := len(q.queue)-q.head, len(q.queue), cap(q.queue), q.dropped
	q.mu.Unlock()
	if dropped != 0 || waiting < 1999 || waiting > 2001 {
		t.Fatalf("%d waiting, %d dropped: want 2000 waiting, none dropped", waiting, dropped)
	}
	if length > 4*2048 || capacity > 4*4096 {
		t.Errorf("queue grew to length %d, capacity %d for 2000 waiting events", length, capacity)
	}
	close(step)
	q.wait(ctx)
}
