package shedlockotel_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockotel"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

var job = shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

type harness struct {
	ex     *shedlock.Executor
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	l      *shedlockotel.Listener
}

func setup(t *testing.T, p shedlock.LockProvider, opts ...shedlock.ExecutorOption) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	h.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	l, err := shedlockotel.New(
		shedlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))),
		shedlockotel.WithTracerProvider(h.tp))
	if err != nil {
		t.Fatal(err)
	}
	h.l = l
	quiet := shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler))
	h.ex = shedlock.NewExecutor(p, append([]shedlock.ExecutorOption{shedlock.WithListener(l), quiet}, opts...)...)
	return h
}

// stop stops the executor: after it, the listener has every event.
func (h *harness) stop(t *testing.T) {
	t.Helper()
	if err := h.ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// values collects the metrics into "name{k=v,...}" -> value, with each
// histogram's count as name.count{...}, its sum as name.sum{...} = 1 if > 0, and
// each instrument's unit as name.unit=<unit> -> 1.
func (h *harness) values(t *testing.T) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != shedlockotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name+".unit="+m.Unit] = 1
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					out[m.Name+key(dp.Attributes)] = float64(dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					out[m.Name+".count"+key(dp.Attributes)] = float64(dp.Count)
					if dp.Sum > 0 {
						out[m.Name+".sum"+key(dp.Attributes)] = 1
					}
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func key(s attribute.Set) string { return "{" + s.Encoded(attribute.DefaultEncoder()) + "}" }

// assertValues checks the measurements, ignoring units (checked once, in
// TestUnits) and measurements at zero that want leaves out.
func (h *harness) assertValues(t *testing.T, want map[string]float64) {
	t.Helper()
	got := h.values(t)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok && !isUnit(k) && v != 0 {
			t.Errorf("unexpected %s = %v", k, v)
		}
	}
}

func isUnit(k string) bool {
	for i := range k {
		if k[i] == '=' && i >= 5 && k[i-5:i] == ".unit" {
			return true
		}
	}
	return false
}

func (h *harness) ended() []sdktrace.ReadOnlySpan { return h.spans.Ended() }

func TestAcquiredAndRun(t *testing.T) {
	h := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	tracer := h.tp.Tracer("caller")
	ctx, parent := tracer.Start(context.Background(), "caller")
	before := time.Now()
	if _, err := h.ex.Run(ctx, job, func(context.Context) error { time.Sleep(time.Millisecond); return nil }); err != nil {
		t.Fatal(err)
	}
	parent.End()
	h.stop(t)
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=job}":                                  1,
		"shedlock.acquisitions{shedlock.lock.name=job}":                              1,
		"shedlock.run.duration.count{shedlock.lock.name=job,shedlock.run.result=ok}": 1,
		"shedlock.run.duration.sum{shedlock.lock.name=job,shedlock.run.result=ok}":   1,
		"shedlock.lock.hold.duration.count{shedlock.lock.name=job}":                  1,
		"shedlock.lock.hold.duration.sum{shedlock.lock.name=job}":                    1,
		"shedlock.runs.active{shedlock.lock.name=job}":                               0,
	})
	spans := h.ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the run's and the caller's", len(spans))
	}
	run := spans[0] // the listener ends the run's span after Run returns
	if run.Name() != "shedlock job" {
		run = spans[1]
	}
	if run.Name() != "shedlock job" {
		t.Fatalf("span names %q, %q: none is the run's", spans[0].Name(), spans[1].Name())
	}
	if run.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("the run's span is not a child of the caller's")
	}
	if run.Status().Code != codes.Unset {
		t.Errorf("status %v", run.Status())
	}
	if run.StartTime().Before(before) || !run.EndTime().After(run.StartTime()) {
		t.Errorf("span from %v to %v, run began %v", run.StartTime(), run.EndTime(), before)
	}
	assertAttr(t, run, "shedlock.lock.name", "job")
	assertAttr(t, run, "shedlock.run.result", "ok")
}

func assertAttr(t *testing.T, s sdktrace.ReadOnlySpan, k, v string) {
	t.Helper()
	for _, kv := range s.Attributes() {
		if string(kv.Key) == k {
			if kv.Value.Emit() != v {
				t.Errorf("attribute %s = %q, want %q", k, kv.Value.Emit(), v)
			}
			return
		}
	}
	t.Errorf("no attribute %s", k)
}

func TestSkippedHeldElsewhere(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	if _, err := store.Provider("other").TryLock(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	h := setup(t, store.Provider("a"))
	for range 2 {
		if ran, err := h.ex.Run(context.Background(), job, func(context.Context) error { return nil }); ran || err != nil {
			t.Fatalf("Run: %v, %v", ran, err)
		}
	}
	h.stop(t)
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=job}":                                  2,
		"shedlock.skips{shedlock.lock.name=job,shedlock.skip.reason=held_elsewhere}": 2,
	})
	if n := len(h.ended()); n != 0 {
		t.Errorf("%d spans for runs that did not run", n)
	}
}

type downProvider struct{ err error }

func (p downProvider) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return nil, p.err
}

func TestStoreDown(t *testing.T) {
	h := setup(t, downProvider{errors.New("dial tcp: connection refused")})
	if _, err := h.ex.Run(context.Background(), job, func(context.Context) error { return nil }); err == nil {
		t.Fatal("Run: want the store's error")
	}
	h.stop(t)
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=job}":     1,
		"shedlock.store.errors{shedlock.lock.name=job}": 1,
	})
	if n := len(h.ended()); n != 0 {
		t.Errorf("%d spans for a run that did not run", n)
	}
}

func TestTaskErrorAndPanic(t *testing.T) {
	h := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	_, _ = h.ex.Run(context.Background(), job, func(context.Context) error { return errors.New("boom") })
	_, _ = h.ex.Run(context.Background(), job, func(context.Context) error { panic("kaboom") })
	h.stop(t)
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=job}":                                     2,
		"shedlock.acquisitions{shedlock.lock.name=job}":                                 2,
		"shedlock.run.duration.count{shedlock.lock.name=job,shedlock.run.result=error}": 1,
		"shedlock.run.duration.sum{shedlock.lock.name=job,shedlock.run.result=error}":   1,
		"shedlock.run.duration.count{shedlock.lock.name=job,shedlock.run.result=panic}": 1,
		"shedlock.run.duration.sum{shedlock.lock.name=job,shedlock.run.result=panic}":   1,
		"shedlock.lock.hold.duration.count{shedlock.lock.name=job}":                     2,
		"shedlock.lock.hold.duration.sum{shedlock.lock.name=job}":                       1,
		"shedlock.runs.active{shedlock.lock.name=job}":                                  0,
	})
	spans := h.ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []string{"boom", "kaboom"} {
		s := spans[i]
		if s.Status().Code != codes.Error {
			t.Errorf("span %d: status %v, want Error", i, s.Status())
		}
		if len(s.Events()) != 1 || s.Events()[0].Name != "exception" {
			t.Errorf("span %d: events %+v, want the recorded error", i, s.Events())
		}
		if got := s.Status().Description; len(got) < len(want) || !contains(got, want) {
			t.Errorf("span %d: status %q lacks %q", i, got, want)
		}
	}
	assertAttr(t, spans[1], "shedlock.run.result", "panic")
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// Stop cancels a run: a cancelled run is no error, on its span or its metrics.
func TestStop(t *testing.T) {
	h := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	running := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = h.ex.Run(context.Background(), job, func(ctx context.Context) error {
			close(running)
			<-ctx.Done()
			return ctx.Err()
		})
	}()
	<-running
	deadline := time.Now().Add(10 * time.Second)
	for h.values(t)["shedlock.runs.active{shedlock.lock.name=job}"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("runs.active never 1")
		}
		time.Sleep(time.Millisecond) // a poll interval
	}
	h.stop(t)
	<-done
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=job}":                                         1,
		"shedlock.acquisitions{shedlock.lock.name=job}":                                     1,
		"shedlock.run.duration.count{shedlock.lock.name=job,shedlock.run.result=cancelled}": 1,
		"shedlock.run.duration.sum{shedlock.lock.name=job,shedlock.run.result=cancelled}":   1,
		"shedlock.lock.hold.duration.count{shedlock.lock.name=job}":                         1,
		"shedlock.lock.hold.duration.sum{shedlock.lock.name=job}":                           1,
		"shedlock.runs.active{shedlock.lock.name=job}":                                      0,
	})
	spans := h.ended()
	if len(spans) != 1 || spans[0].Status().Code != codes.Unset {
		t.Fatalf("spans %+v: want one, not an error", spans)
	}
	assertAttr(t, spans[0], "shedlock.run.result", "cancelled")
}

// lossyProvider's locks extend once, fail once, then are found lost.
type lossyProvider struct{ shedlock.LockProvider }

func (p lossyProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &lossyLock{Lock: l}, nil
}

type lossyLock struct {
	shedlock.Lock
	n int
}

func (l *lossyLock) Extend(ctx context.Context, most, least time.Duration) error {
	l.n++
	switch l.n {
	case 1:
		return l.Lock.Extend(ctx, most, least)
	case 2:
		return errors.New("connection reset")
	}
	return shedlock.ErrLockLost
}

func TestKeepAliveExtendedThenLost(t *testing.T) {
	h := setup(t, lossyProvider{shedlocktest.NewMemoryStore().Provider("a")}, shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "kept", LockAtMostFor: 90 * time.Millisecond}
	if _, err := h.ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("Run: %v", err)
	}
	h.stop(t)
	h.assertValues(t, map[string]float64{
		"shedlock.attempts{shedlock.lock.name=kept}":                                     1,
		"shedlock.acquisitions{shedlock.lock.name=kept}":                                 1,
		"shedlock.extensions{shedlock.lock.name=kept}":                                   1,
		"shedlock.extension.errors{shedlock.lock.name=kept}":                             1,
		"shedlock.lock.losses{shedlock.lock.name=kept,shedlock.loss.reason=lost}":        1,
		"shedlock.run.duration.count{shedlock.lock.name=kept,shedlock.run.result=error}": 1,
		"shedlock.run.duration.sum{shedlock.lock.name=kept,shedlock.run.result=error}":   1,
		"shedlock.lock.hold.duration.count{shedlock.lock.name=kept}":                     1,
		"shedlock.lock.hold.duration.sum{shedlock.lock.name=kept}":                       1,
		"shedlock.runs.active{shedlock.lock.name=kept}":                                  0,
	})
	spans := h.ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	var names []string
	for _, e := range spans[0].Events() {
		names = append(names, e.Name)
	}
	want := []string{"shedlock.extended", "shedlock.extend_failed", "shedlock.lock.lost", "exception"}
	if len(names) != len(want) {
		t.Fatalf("span events %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("span events %v, want %v", names, want)
		}
	}
	if spans[0].Status().Code != codes.Error {
		t.Errorf("status %v", spans[0].Status())
	}
}

// The instruments' units follow OpenTelemetry's conventions: seconds for
// durations, {annotations} for counts.
func TestUnits(t *testing.T) {
	h := setup(t, shedlocktest.NewMemoryStore().Provider("a"))
	_, _ = h.ex.Run(context.Background(), job, func(context.Context) error { return nil })
	h.stop(t)
	got := h.values(t)
	for _, want := range []string{
		"shedlock.attempts.unit={attempt}", "shedlock.acquisitions.unit={acquisition}",
		"shedlock.run.duration.unit=s", "shedlock.lock.hold.duration.unit=s", "shedlock.runs.active.unit={run}",
	} {
		if got[want] != 1 {
			t.Errorf("no %s", want)
		}
	}
}
