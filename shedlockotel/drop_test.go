package shedlockotel_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockotel"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A listener that falls behind loses whole runs, never part of one: the spans
// of the runs it saw are whole and, the runs being healthy, no error; the count
// of active runs ends at 0; the dropped events are counted, each one.
func TestDroppedEventsLeaveSpansRight(t *testing.T) {
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	l, err := shedlockotel.New(
		shedlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))),
		shedlockotel.WithTracerProvider(h.tp))
	if err != nil {
		t.Fatal(err)
	}
	g := &gated{next: l, gate: make(chan struct{})}
	h.ex = shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("p"), shedlock.WithListener(g),
		shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)))
	events := overflow(t, h.ex, g)

	got := h.values(t)
	for _, lock := range []string{"a", "m", "b", "filler"} {
		if v := got["shedlock.runs.active{shedlock.lock.name="+lock+"}"]; v != 0 {
			t.Errorf("runs.active{%s} = %v with nothing running", lock, v)
		}
	}
	if got["shedlock.events.dropped{}"] != float64(g.dropped.Load()) || g.delivered.Load()+g.dropped.Load() != events {
		t.Errorf("events.dropped %v; %d delivered + %d dropped, want %d events", got["shedlock.events.dropped{}"],
			g.delivered.Load(), g.dropped.Load(), events)
	}
	if n := len(h.spans.Started()) - len(h.ended()); n != 0 {
		t.Errorf("%d spans never ended", n)
	}
	names := map[string]int{}
	for _, s := range h.ended() {
		names[s.Name()]++
		if s.Status().Code != codes.Unset {
			t.Errorf("span %q of a healthy run: status %v %q", s.Name(), s.Status().Code, s.Status().Description)
		}
	}
	if names["shedlock a"] != 1 || names["shedlock m"] != 1 || names["shedlock b"] != 0 {
		t.Errorf("spans by name %v: want one each of the runs admitted whole (a, m), none of b", names)
	}
	if float64(names["shedlock filler"]) != got["shedlock.acquisitions{shedlock.lock.name=filler}"] {
		t.Errorf("%d filler spans, %v filler acquisitions", names["shedlock filler"], got["shedlock.acquisitions{shedlock.lock.name=filler}"])
	}
	t.Logf("%d events: %d delivered, %d dropped", events, g.delivered.Load(), g.dropped.Load())
}

// gated passes on to next the first two events at once, the others once gate
// is closed, and counts them.
type gated struct {
	next      shedlock.Listener
	gate      chan struct{}
	seen      atomic.Int64
	delivered atomic.Int64 // events passed on, EventDropped aside
	dropped   atomic.Int64 // the counts EventDropped reported
}

func (g *gated) OnEvent(ctx context.Context, ev shedlock.Event) {
	if g.seen.Add(1) > 2 {
		<-g.gate
	}
	if ev.Kind == shedlock.EventDropped {
		g.dropped.Add(int64(ev.Dropped))
	} else {
		g.delivered.Add(1)
	}
	g.next.OnEvent(ctx, ev)
}

// blockedRun starts a run of name whose task waits for finish to close; it
// returns once the task runs, and done closes when Run has returned.
func blockedRun(t *testing.T, ex *shedlock.Executor, name string) (finish, done chan struct{}) {
	t.Helper()
	started, finish, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		_, _ = ex.Run(context.Background(), shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute},
			func(context.Context) error { close(started); <-finish; return nil })
	}()
	<-started
	return finish, done
}

// overflow makes the executor's event queue (4096 events) overflow while g is
// blocked, with runs in every position: "a" holds its lock throughout, and
// the listener has seen it begin; "m"
// begins before the queue is full and ends while it is full; "b" begins while
// it is full and ends after the listener has caught up; 1100 "filler" runs
// overflow the queue. Every run ends well (TaskOK, released), four events each.
// It returns once ex is stopped, with how many events the runs made.
func overflow(t *testing.T, ex *shedlock.Executor, g *gated) (events int64) {
	t.Helper()
	fill := func(n int) {
		for range n {
			ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "filler", LockAtMostFor: time.Minute},
				func(context.Context) error { return nil })
			if !ran || err != nil {
				t.Fatalf("filler: %v, %v", ran, err)
			}
		}
	}
	finishA, doneA := blockedRun(t, ex, "a")
	waitUntil(t, "a's first two events delivered", func() bool { return g.delivered.Load() == 2 })
	fill(1000) // 4000 events: the queue still has room
	finishM, doneM := blockedRun(t, ex, "m")
	fill(100) // the queue overflows
	close(finishM)
	<-doneM // m ended while the queue was full
	finishB, doneB := blockedRun(t, ex, "b")

	close(g.gate)
	const beforeB = 2 + 4*1000 + 4 + 4*100 + 2 // every event made so far: delivered or counted as dropped
	waitUntil(t, "the listener to catch up", func() bool { return g.delivered.Load()+g.dropped.Load() == beforeB })
	close(finishB)
	<-doneB // b ends after the listener caught up
	close(finishA)
	<-doneA
	if err := ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if g.dropped.Load() == 0 {
		t.Fatal("no event was dropped: the queue did not overflow")
	}
	return 4 * (3 + 1100)
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(time.Millisecond) // a poll interval
	}
}
