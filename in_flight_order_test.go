package shedlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/inflight"
	"github.com/shedlock-go/shedlock/internal/jobname"
)

// scriptedProvider answers each name as told (nil error: a lock), records the
// order of its attempts, and can hold one name's attempt until released.
type scriptedProvider struct {
	mu      sync.Mutex
	answers map[string]error
	order   []string
	hold    string        // this name's attempt waits for release
	holding chan struct{} // closed once hold's attempt waits
	release chan struct{}
}

func (p *scriptedProvider) TryLock(_ context.Context, cfg LockConfig) (Lock, error) {
	p.mu.Lock()
	p.order = append(p.order, cfg.Name)
	err := p.answers[cfg.Name]
	hold := cfg.Name == p.hold
	p.mu.Unlock()
	if hold {
		close(p.holding)
		<-p.release
	}
	if err != nil {
		return nil, err
	}
	return nopLock{}, nil
}

type nopLock struct{}

func (nopLock) Unlock(context.Context) error                               { return nil }
func (nopLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }

func (p *scriptedProvider) answer(name string, err error) {
	p.mu.Lock()
	p.answers[name] = err
	p.mu.Unlock()
}

func runOnce(t *testing.T, ex *Executor, name string) {
	t.Helper()
	if _, err := ex.Run(context.Background(), LockConfig{Name: name, LockAtMostFor: time.Minute},
		func(context.Context) error { return nil }); err != nil && !errors.Is(err, errStore) {
		t.Errorf("run %s: %v", name, err)
	}
}

var errStore = errors.New("store down")

// When a pod's attempts wait for a statement slot, the attempt on the name the
// pod took last goes before the others, even when it queued last: at a herd's
// tick each job is tried early by its last winner.
func TestAttemptOnNameWonLastGoesFirst(t *testing.T) {
	t.Parallel()
	const others = 50
	p := &scriptedProvider{answers: map[string]error{}, hold: "blocker",
		holding: make(chan struct{}), release: make(chan struct{})}
	ex := NewExecutor(p, WithMaxInFlight(1))
	names := make([]string, others)
	for i := range names {
		names[i] = fmt.Sprintf("theirs-%d", i)
		p.answer(names[i], ErrNotAcquired)
		runOnce(t, ex, names[i])
	}
	runOnce(t, ex, "mine")

	// The blocker's attempt keeps the only slot while the tick's attempts queue.
	var wg sync.WaitGroup
	wg.Add(others + 2)
	go func() { defer wg.Done(); runOnce(t, ex, "blocker") }()
	<-p.holding
	for _, n := range append(names, "mine") {
		go func() { defer wg.Done(); runOnce(t, ex, n) }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !queued(ex.attempts.inFlight(), others+1) {
		if time.Now().After(deadline) {
			t.Fatal("the tick's attempts did not all queue within 10s")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	close(p.release)
	wg.Wait()

	p.mu.Lock()
	defer p.mu.Unlock()
	tick := p.order[len(p.order)-others-2:]
	if tick[0] != "blocker" || tick[1] != "mine" {
		t.Fatalf("attempts after the blocker: %v...; want mine first", tick[:min(5, len(tick))])
	}
}

// queued reports whether n attempts wait for a slot.
func queued(s *inflight.Slots[*attempt], n int) bool {
	a, w := s.Waiting()
	return a+w == n
}

// An attempt that took the lock makes the name's next attempt a WonLast; one
// that found it held elsewhere makes it an Attempt again; a store error
// changes nothing.
func TestWonLastFollowsOutcomes(t *testing.T) {
	t.Parallel()
	p := &scriptedProvider{answers: map[string]error{}}
	ex := NewExecutor(p, WithExecutorLogger(slog.New(slog.DiscardHandler)))
	kind := func() inflight.Kind {
		t.Helper()
		_, _, k, err := ex.enter("job")
		if err != nil {
			t.Fatal(err)
		}
		ex.leave(jobname.Key("job"), false, false)
		return k
	}
	for _, step := range []struct {
		answer error
		want   inflight.Kind
	}{
		{ErrNotAcquired, inflight.Attempt},
		{nil, inflight.WonLast},
		{errStore, inflight.WonLast},
		{ErrNotAcquired, inflight.Attempt},
		{errStore, inflight.Attempt},
	} {
		p.answer("job", step.answer)
		runOnce(t, ex, "job")
		if got := kind(); got != step.want {
			t.Fatalf("after an attempt answered %v: kind %d, want %d", step.answer, got, step.want)
		}
	}
	// A name's case, accents and trailing spaces are the store's one row.
	p.answer("job", nil)
	runOnce(t, ex, "job")
	if _, _, k, _ := ex.enter("JÓB "); k != inflight.WonLast {
		t.Fatalf("JÓB after job was taken: kind %d, want %d", k, inflight.WonLast)
	}
}
