package shedlock

import (
	"context"
	"log/slog"
	"sync"
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

// recording is a listener that waits for gate (when set), then records.
type recording struct {
	gate chan struct{}
	mu   sync.Mutex
	evs  []Event
}

func (r *recording) OnEvent(_ context.Context, ev Event) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recording) events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.evs...)
}

func pushRun(q *eventQueue, n uint64, kinds ...EventKind) {
	for _, k := range kinds {
		q.push(context.Background(), Event{Kind: k, Run: RunID{n: n}})
	}
}

// A full queue drops a new run whole, from its first event to its last, and
// still queues the rest of runs it admitted, past its limit if need be.
func TestEventQueueDropsWholeRuns(t *testing.T) {
	r := &recording{gate: make(chan struct{})}
	q := newEventQueue([]Listener{r}, slog.New(slog.DiscardHandler))
	q.limit = 8
	for n := uint64(1); n <= 4; n++ { // runs 1-3 fit (4 events each, as far as the limit goes); 4 does not
		pushRun(q, n, EventAttempt, EventAcquired)
	}
	for n := uint64(1); n <= 4; n++ {
		pushRun(q, n, EventFinished, EventReleased)
	}
	q.mu.Lock()
	waiting, remembered := len(q.queue)-q.head, len(q.droppedRuns)
	q.mu.Unlock()
	if waiting <= q.limit {
		t.Errorf("%d waiting: the admitted runs' ends must queue past the limit of %d", waiting, q.limit)
	}
	if remembered != 0 {
		t.Errorf("%d dropped runs remembered after their last event", remembered)
	}
	close(r.gate)
	q.wait(context.Background())

	perRun := map[uint64]int{}
	var dropped uint64
	for _, ev := range r.events() {
		if ev.Kind == EventDropped {
			dropped += ev.Dropped
			continue
		}
		perRun[ev.Run.n]++
	}
	if perRun[1] != 4 || perRun[2] != 4 || perRun[3] != 4 || perRun[4] != 0 || dropped != 4 {
		t.Errorf("events per run %v, %d dropped: want runs 1-3 whole, run 4's 4 events dropped", perRun, dropped)
	}
}

// Drops are reported once listeners are no longer behind, even when no event
// comes after them.
func TestEventQueueReportsDropsWhenIdle(t *testing.T) {
	r := &recording{}
	q := newEventQueue([]Listener{r}, slog.New(slog.DiscardHandler))
	q.limit = 0 // every run dropped
	pushRun(q, 1, EventAttempt)
	q.wait(context.Background())
	pushRun(q, 1, EventSkipped)
	q.wait(context.Background())
	var dropped uint64
	for _, ev := range r.events() {
		if ev.Kind != EventDropped {
			t.Fatalf("event %v of a dropped run delivered", ev.Kind)
		}
		dropped += ev.Dropped
	}
	if dropped != 2 {
		t.Errorf("%d drops reported, want 2", dropped)
	}
	if len(q.droppedRuns) != 0 {
		t.Errorf("%d dropped runs remembered after their last event", len(q.droppedRuns))
	}
}

// Runs dropped that never make their last event (a provider that panicked) are
// forgotten, oldest first, past droppedRunsLimit.
func TestEventQueueDroppedRunsBounded(t *testing.T) {
	q := newEventQueue([]Listener{ListenerFunc(func(context.Context, Event) {})}, slog.New(slog.DiscardHandler))
	q.limit = 0
	for n := uint64(1); n <= droppedRunsLimit+10; n++ {
		pushRun(q, n, EventAttempt)
	}
	q.wait(context.Background())
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.droppedRuns) != droppedRunsLimit {
		t.Errorf("%d dropped runs remembered, want %d", len(q.droppedRuns), droppedRunsLimit)
	}
	for _, n := range []uint64{1, 10} {
		if _, ok := q.droppedRuns[RunID{n: n}]; ok {
			t.Errorf("run %d, among the oldest, still remembered", n)
		}
	}
	if _, ok := q.droppedRuns[RunID{n: 11}]; !ok {
		t.Error("run 11 forgotten")
	}
}
