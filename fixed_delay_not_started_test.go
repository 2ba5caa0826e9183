package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// records keeps what a logger handles and signals each record.
type records struct {
	mu   sync.Mutex
	all  []slog.Record
	each chan slog.Record
}

func newRecords() *records { return &records{each: make(chan slog.Record, 16)} }

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.all = append(r.all, rec)
	r.mu.Unlock()
	select {
	case r.each <- rec:
	default:
	}
	return nil
}

func (r *records) warnings() []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w []slog.Record
	for _, rec := range r.all {
		if rec.Level >= slog.LevelWarn {
			w = append(w, rec)
		}
	}
	return w
}

// heldElsewhere is a store where another instance always holds the lock; it
// signals each attempt.
type heldElsewhere struct{ attempts chan struct{} }

func (h heldElsewhere) TryLock(context.Context, LockConfig) (Lock, error) {
	select {
	case h.attempts <- struct{}{}:
	default:
	}
	return nil, ErrNotAcquired
}

func noop(context.Context) error { return nil }

// FixedDelay jobs registered and never started are a warning, once, when the
// wait for Start has passed: before, the mistake showed only at Stop.
func TestFixedDelayNotStartedWarns(t *testing.T) {
	t.Parallel()
	log := newRecords()
	e := NewExecutor(heldElsewhere{}, WithExecutorLogger(slog.New(log)))
	e.notStartedAfter = 10 * time.Millisecond
	for _, name := range []string{"cleanup", "report"} {
		if err := e.FixedDelay(LockConfig{Name: name, LockAtMostFor: time.Minute}, time.Hour, noop); err != nil {
			t.Fatal(err)
		}
	}
	var warned slog.Record
	select {
	case warned = <-log.each:
	case <-time.After(10 * time.Second):
		t.Fatal("no warning within 10 s of a 10 ms wait for Start")
	}
	var attrs []string
	warned.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
	if warned.Level != slog.LevelWarn || !strings.Contains(warned.Message, "never started") ||
		!strings.Contains(warned.Message, "Executor.Start") || !strings.Contains(fmt.Sprint(attrs), "jobs=[cleanup report]") {
		t.Fatalf("warning: %v %q %v", warned.Level, warned.Message, attrs)
	}
	if err := e.Stop(context.Background()); !errors.Is(err, ErrNotStarted) {
		t.Fatalf("Stop: %v, want ErrNotStarted", err)
	}
	if n := len(log.warnings()); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

// Loops started in time are no warning.
func TestFixedDelayStartedNoWarning(t *testing.T) {
	t.Parallel()
	log := newRecords()
	store := heldElsewhere{attempts: make(chan struct{})}
	e := NewExecutor(store, WithExecutorLogger(slog.New(log)))
	e.notStartedAfter = 20 * time.Millisecond
	if err := e.FixedDelay(LockConfig{Name: "cleanup", LockAtMostFor: time.Minute}, 5*time.Millisecond, noop); err != nil {
		t.Fatal(err)
	}
	e.Start()
	// Five attempts, 5 ms apart: the wait for Start has passed.
	for range 5 {
		select {
		case <-store.attempts:
		case <-time.After(10 * time.Second):
			t.Fatal("the loop does not run")
		}
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w := log.warnings(); len(w) != 0 {
		t.Fatalf("warnings: %v", w[0].Message)
	}
}
