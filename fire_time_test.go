package shedlock

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A zero fire time is no fire time: the run goes ahead. Before, every attempt
// was late, and the job silently never ran.
func TestZeroFireTimeIsNone(t *testing.T) {
	t.Parallel()
	ex := NewExecutor(&scriptedProvider{answers: map[string]error{}})
	ran, err := ex.Run(ContextWithFireTime(context.Background(), time.Time{}),
		LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Second},
		func(context.Context) error { return nil })
	if err != nil || !ran {
		t.Fatalf("Run with the zero fire time: ran %v, %v; want it run", ran, err)
	}
}

// A fire time so old that the run is late on arrival skips the run, and says
// so at warn level once per name, not at the skip level alone.
func TestOldFireTimeWarnsOncePerName(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	ex := NewExecutor(&scriptedProvider{answers: map[string]error{}},
		WithExecutorLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	old := ContextWithFireTime(context.Background(), time.Now().Add(-time.Hour))
	for _, name := range []string{"a", "a", "b"} {
		ran, err := ex.Run(old, LockConfig{Name: name, LockAtMostFor: time.Minute, LockAtLeastFor: time.Second},
			func(context.Context) error { return nil })
		if err != nil || ran {
			t.Fatalf("Run %s an hour after its fire time: ran %v, %v; want it skipped", name, ran, err)
		}
	}
	warns := strings.Count(logs.String(), "level=WARN")
	if warns != 2 || !strings.Contains(logs.String(), "lock=a") || !strings.Contains(logs.String(), "lock=b") {
		t.Fatalf("%d warnings, want one for a and one for b:\n%s", warns, logs.String())
	}
}

// Run without a fire time takes the moment it was called as one: an attempt
// that waits in the executor's own queue past half of LockAtLeastFor gives up
// rather than take a lock whose tick another pod may have run. Before, it
// waited for its slot until the acquire timeout.
func TestRunWithoutFireTimeGivesUpInQueue(t *testing.T) {
	t.Parallel()
	p := &scriptedProvider{answers: map[string]error{}, hold: "blocker",
		holding: make(chan struct{}), release: make(chan struct{})}
	ex := NewExecutor(p, WithMaxInFlight(1), WithAcquireTimeout(time.Minute))
	blocked := make(chan struct{})
	go func() { defer close(blocked); runOnce(t, ex, "blocker") }()
	<-p.holding
	ran, err := ex.Run(context.Background(), LockConfig{Name: "queued", LockAtMostFor: time.Minute, LockAtLeastFor: 200 * time.Millisecond},
		func(context.Context) error { return nil })
	close(p.release)
	<-blocked
	if err != nil || ran {
		t.Fatalf("Run queued past its window: ran %v, %v; want (false, nil)", ran, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if slices.Contains(p.order, "queued") {
		t.Fatalf("the late attempt was sent: %v", p.order)
	}
}

// syncBuffer is a bytes.Buffer that a logger may write from several goroutines.
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
