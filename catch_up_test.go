package shedlock_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// countingFire is a store's FireLocker that counts what the executor asks of it.
type countingFire struct {
	shedlock.LockProvider
	fl          shedlock.FireLocker
	takes, read atomic.Int32
}

func newCountingFire(store *shedlocktest.MemoryStore) *countingFire {
	p := store.Provider("pod")
	return &countingFire{LockProvider: p, fl: p.(shedlock.FireLocker)}
}

func (c *countingFire) TryLockFire(ctx context.Context, cfg shedlock.LockConfig, fire time.Time) (shedlock.FireLock, error) {
	c.takes.Add(1)
	return c.fl.TryLockFire(ctx, cfg, fire)
}

func (c *countingFire) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	c.read.Add(1)
	return c.fl.LastFire(ctx, name)
}

var noop = func(context.Context) error { return nil }

func TestCatchUpRefused(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	ex := shedlock.NewExecutor(store.Provider("pod"))
	defer ex.Stop(context.Background())
	c := cron.New(cron.WithSeconds())

	if _, err := ex.Schedule(c, "@every 10s", cfg, noop, shedlock.CatchUp(time.Hour)); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("Schedule @every with CatchUp: %v, want ErrInvalidConfig", err)
	}
	if len(c.Entries()) != 0 {
		t.Errorf("a refused job left %d entries in the cron", len(c.Entries()))
	}
	for _, opt := range []shedlock.JobOption{shedlock.CatchUp(0), shedlock.CatchUp(-time.Second), shedlock.CatchUpRetry(0)} {
		if _, err := ex.Schedule(c, "0 * * * * *", cfg, noop, opt); !errors.Is(err, shedlock.ErrInvalidOption) {
			t.Errorf("Schedule with a bad catch-up option: %v, want ErrInvalidOption", err)
		}
	}
	if _, err := ex.RunWith(context.Background(), cfg, noop, shedlock.CatchUp(time.Hour)); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("RunWith CatchUp: %v, want ErrInvalidOption", err)
	}
	if _, err := ex.Wrap(shedlock.LockConfig{Name: "wrapped", LockAtMostFor: time.Minute}, shedlock.JobFunc(noop),
		shedlock.CatchUp(time.Hour)); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("Wrap CatchUp: %v, want ErrInvalidOption", err)
	}
	if err := ex.FixedDelay(shedlock.LockConfig{Name: "loop", LockAtMostFor: time.Minute}, time.Second, noop,
		shedlock.CatchUp(time.Hour)); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("FixedDelay CatchUp: %v, want ErrInvalidOption", err)
	}

	plain := shedlock.NewExecutor(struct{ shedlock.LockProvider }{store.Provider("pod")}) // no FireLocker
	defer plain.Stop(context.Background())
	if _, err := plain.Schedule(c, "0 * * * * *", cfg, noop, shedlock.CatchUp(time.Hour)); !errors.Is(err, shedlock.ErrInvalidOption) {
		t.Errorf("CatchUp on a provider that records no fire times: %v, want ErrInvalidOption", err)
	}
}

// Without CatchUp, Schedule never asks the store about fire times: the same
// statements as before.
func TestScheduleWithoutCatchUpAsksNoFireTimes(t *testing.T) {
	p := newCountingFire(shedlocktest.NewMemoryStore())
	ex := shedlock.NewExecutor(p)
	c := cron.New(cron.WithSeconds())
	ran := make(chan struct{}, 4)
	if _, err := ex.Schedule(c, "* * * * * *", shedlock.LockConfig{Name: "plain", LockAtMostFor: 10 * time.Second},
		func(context.Context) error { ran <- struct{}{}; return nil }, shedlock.ClockSkew(100*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	c.Start()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the job never ran")
	}
	<-c.Stop().Done()
	if err := ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, m := p.takes.Load(), p.read.Load(); n != 0 || m != 0 {
		t.Errorf("a job without CatchUp made %d TryLockFire and %d LastFire calls; want none", n, m)
	}
}

// A fire time past its window with no run that succeeded is logged at warn
// level once, and sent to the listeners once, with the fire time.
func TestCatchUpMissedFireTime(t *testing.T) {
	p := newCountingFire(shedlocktest.NewMemoryStore())
	var logs syncBuffer
	events := make(chan shedlock.Event, 8)
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventMissedFireTime {
				events <- ev
			}
		})))
	c := cron.New(cron.WithSeconds())
	awayFromTheHour()
	latest := time.Now().Truncate(time.Hour)
	cfg := shedlock.LockConfig{Name: "missed", LockAtMostFor: time.Minute}
	// The job last succeeded two hours ago.
	l, err := p.fl.TryLockFire(context.Background(), cfg, latest.Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.UnlockSucceeded(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	p.takes.Store(0)
	// A window of a millisecond: the last hour's fire time is past it at start.
	if _, err := ex.Schedule(c, "0 0 * * * *", cfg, noop, shedlock.CatchUp(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var ev shedlock.Event
	select {
	case ev = <-events:
	case <-time.After(5 * time.Second):
		t.Fatal("no EventMissedFireTime")
	}
	if err := ex.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !ev.FireTime.Equal(latest) || ev.Config.Name != "missed" {
		t.Errorf("EventMissedFireTime for %q at %v; want %q at %v", ev.Config.Name, ev.FireTime, "missed", latest)
	}
	if n := strings.Count(logs.String(), "missed fire time"); n != 1 {
		t.Errorf("logged the missed fire time %d times; want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("not logged at warn level:\n%s", logs.String())
	}
	if len(events) != 0 {
		t.Errorf("%d more EventMissedFireTime", len(events))
	}
	if n := p.takes.Load(); n != 0 {
		t.Errorf("%d takes of a fire time past its window", n)
	}
}

// syncBuffer is a bytes.Buffer for a logger written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A job just added, which has never succeeded anywhere (the store records no
// fire time for it), reports no fire time before its first as missed.
func TestCatchUpNewJobReportsNothingMissed(t *testing.T) {
	p := newCountingFire(shedlocktest.NewMemoryStore())
	var logs syncBuffer
	var missed atomic.Int32
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventMissedFireTime {
				missed.Add(1)
			}
		})))
	c := cron.New(cron.WithSeconds())
	awayFromTheHour()
	if _, err := ex.Schedule(c, "0 0 * * * *", shedlock.LockConfig{Name: "new", LockAtMostFor: time.Minute},
		noop, shedlock.CatchUp(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.read.Load() == 0 { // the start check read the record
		if time.Now().After(deadline) {
			t.Fatal("the start check never read the record")
		}
		time.Sleep(time.Millisecond) // a poll with a deadline
	}
	if err := ex.Stop(context.Background()); err != nil { // waits for the check to end
		t.Fatal(err)
	}
	if n := missed.Load(); n != 0 || strings.Contains(logs.String(), "missed fire time") {
		t.Errorf("a new job reported %d missed fire times:\n%s", n, logs.String())
	}
}

// awayFromTheHour waits, within the first second of an hour, until that
// second has passed, so that the last hour's fire time is past a window of a
// millisecond: a precondition of the test, not a synchronisation.
func awayFromTheHour() {
	if d := time.Since(time.Now().Truncate(time.Hour)); d < time.Second {
		time.Sleep(time.Second - d)
	}
}
