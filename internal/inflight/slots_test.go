package inflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

// request asks s for a slot in a goroutine; the channel gets its done func
// once granted.
func request(s *Slots, k Kind) <-chan func() {
	got := make(chan func(), 1)
	go func() {
		if done, err := s.Acquire(context.Background(), k, time.Time{}, time.Time{}); err == nil {
			got <- done
		}
	}()
	return got
}

func granted(t *testing.T, got <-chan func()) func() {
	t.Helper()
	select {
	case done := <-got:
		return done
	case <-time.After(5 * time.Second):
		t.Fatal("slot not granted")
		return nil
	}
}

func notGranted(t *testing.T, got <-chan func()) {
	t.Helper()
	select {
	case <-got:
		t.Fatal("slot granted while it should wait")
	default:
	}
}

// queued polls until, of each kind, as many as want wait.
func queued(t *testing.T, s *Slots, want [kinds]int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var got [kinds]int
		s.mu.Lock()
		for k := range got {
			got[k] = len(s.waiting[k])
		}
		s.mu.Unlock()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting (Attempt, WonLast, Held): %v; want %v", got, want)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

// Releases and extensions go before every waiting attempt, attempts on names
// won last before the others, and no more than size statements are in flight.
func TestSlots(t *testing.T) {
	s := New(2)
	a1, a2 := granted(t, request(s, Attempt)), granted(t, request(s, Attempt))
	waiting := request(s, Attempt)
	queued(t, s, [kinds]int{1, 0, 0})
	again := request(s, WonLast)
	queued(t, s, [kinds]int{1, 1, 0})
	r := request(s, Held)
	queued(t, s, [kinds]int{1, 1, 1})
	notGranted(t, waiting)
	notGranted(t, again)
	notGranted(t, r)
	a1()
	rDone := granted(t, r) // before the attempts that waited longer
	notGranted(t, waiting)
	notGranted(t, again)
	a2()
	againDone := granted(t, again) // before the attempt that waited longer
	notGranted(t, waiting)
	rDone()
	granted(t, waiting)()
	againDone()
	if s.used != 0 {
		t.Fatalf("slots left in use: %d", s.used)
	}
}

// A waiter gives up with its context's cause, or ErrLate at its end, and
// holds nothing after.
func TestSlotsWaitEnds(t *testing.T) {
	s := New(1)
	done, err := s.Acquire(context.Background(), Attempt, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	for k := range kinds {
		if _, err := s.Acquire(ctx, k, time.Time{}, time.Time{}); !errors.Is(err, cause) {
			t.Fatalf("acquire(kind %d): %v, want the cause", k, err)
		}
	}
	soon, later := time.Now().Add(time.Millisecond), time.Now().Add(time.Hour)
	if _, err := s.Acquire(context.Background(), Attempt, soon, later); !errors.Is(err, ErrLate) {
		t.Fatalf("attempt past its window: %v, want ErrLate", err)
	}
	if _, err := s.Acquire(context.Background(), WonLast, later, soon); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attempt past its deadline: %v, want DeadlineExceeded", err)
	}
	done()
	if s.used != 0 || s.aheadOf(Attempt) {
		t.Fatal("a waiter that gave up is still counted")
	}
}
