package eventqueue

import (
	"context"
	"sync"
	"testing"
)

// event stands for an executor's event: its run, and where it stands in it.
type event struct {
	run   uint64
	place Place
}

func placeOf(ev event) (uint64, Place) { return ev.run, ev.place }

// recording is a listener that waits for gate (when set), then records.
type recording struct {
	gate    chan struct{}
	mu      sync.Mutex
	evs     []event
	dropped uint64
}

func (r *recording) send(_ context.Context, ev event) {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recording) drop(_ context.Context, n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dropped += n
}

func (r *recording) queue() *Queue[event] { return New(placeOf, r.send, r.drop) }

func (r *recording) perRun() (map[uint64]int, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	per := map[uint64]int{}
	for _, ev := range r.evs {
		per[ev.run]++
	}
	return per, r.dropped
}

// pushRun pushes a run's events: first, within ones, then last.
func pushRun(q *Queue[event], run uint64, places ...Place) {
	for _, p := range places {
		q.Push(context.Background(), event{run, p})
	}
}

// A queue that is never empty, because its listener is always a little behind,
// must not grow: delivered events' room is reused.
func TestNeverEmptyStaysBounded(t *testing.T) {
	step := make(chan struct{})
	q := New(placeOf, func(context.Context, event) { <-step }, func(context.Context, uint64) {})
	for n := range uint64(2000) {
		pushRun(q, n, First)
	}
	for n := range uint64(20000) {
		step <- struct{}{} // one event delivered
		pushRun(q, 2000+n, First)
	}
	q.mu.Lock()
	waiting, length, capacity, lost := len(q.queue)-q.head, len(q.queue), cap(q.queue), q.lost
	q.mu.Unlock()
	if lost != 0 || waiting < 1999 || waiting > 2001 {
		t.Fatalf("%d waiting, %d dropped: want 2000 waiting, none dropped", waiting, lost)
	}
	if length > 4*2048 || capacity > 4*4096 {
		t.Errorf("queue grew to length %d, capacity %d for 2000 waiting events", length, capacity)
	}
	close(step)
	q.Wait(context.Background())
}

// A full queue drops a new run whole, from its first event to its last, and
// still queues the rest of runs it admitted, past its limit if need be.
func TestDropsWholeRuns(t *testing.T) {
	r := &recording{gate: make(chan struct{})}
	q := r.queue()
	q.limit = 8
	for n := uint64(1); n <= 4; n++ { // runs 1-3 fit (4 events each, as far as the limit goes); 4 does not
		pushRun(q, n, First, Within)
	}
	for n := uint64(1); n <= 4; n++ {
		pushRun(q, n, Within, Last)
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
	q.Wait(context.Background())

	per, dropped := r.perRun()
	if per[1] != 4 || per[2] != 4 || per[3] != 4 || per[4] != 0 || dropped != 4 {
		t.Errorf("events per run %v, %d dropped: want runs 1-3 whole, run 4's 4 events dropped", per, dropped)
	}
}

// Drops are reported once listeners are no longer behind, even when no event
// comes after them.
func TestReportsDropsWhenIdle(t *testing.T) {
	r := &recording{}
	q := r.queue()
	q.limit = 0 // every run dropped
	pushRun(q, 1, First)
	q.Wait(context.Background())
	pushRun(q, 1, Last)
	q.Wait(context.Background())
	per, dropped := r.perRun()
	if len(per) != 0 {
		t.Fatalf("events of a dropped run delivered: %v", per)
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
func TestDroppedRunsBounded(t *testing.T) {
	q := (&recording{}).queue()
	q.limit = 0
	for n := uint64(1); n <= droppedRunsLimit+10; n++ {
		pushRun(q, n, First)
	}
	q.Wait(context.Background())
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.droppedRuns) != droppedRunsLimit {
		t.Errorf("%d dropped runs remembered, want %d", len(q.droppedRuns), droppedRunsLimit)
	}
	for _, n := range []uint64{1, 10} {
		if _, ok := q.droppedRuns[n]; ok {
			t.Errorf("run %d, among the oldest, still remembered", n)
		}
	}
	if _, ok := q.droppedRuns[11]; !ok {
		t.Error("run 11 forgotten")
	}
}

// A nil queue, an executor's without listeners, waits for nothing.
func TestNilQueueWaitsForNothing(t *testing.T) {
	var q *Queue[event]
	q.Wait(context.Background())
}
