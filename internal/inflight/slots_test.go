package inflight

import (
	"context"
	"errors"
	"testing"
	"time"
)

// request asks s for a slot for v in a goroutine; the channel gets the grant.
func request(s *Slots[int], k Kind, v int) <-chan Grant[int] {
	got := make(chan Grant[int], 1)
	go func() {
		if g, err := s.Acquire(context.Background(), k, v, uint64(v), time.Time{}, time.Time{}); err == nil {
			got <- g
		}
	}()
	return got
}

func granted(t *testing.T, got <-chan Grant[int]) Grant[int] {
	t.Helper()
	select {
	case g := <-got:
		return g
	case <-time.After(5 * time.Second):
		t.Fatal("slot not granted")
		return Grant[int]{}
	}
}

func notGranted(t *testing.T, got <-chan Grant[int]) {
	t.Helper()
	select {
	case <-got:
		t.Fatal("slot granted while it should wait")
	default:
	}
}

// queued polls until, of each kind, as many as want wait.
func queued(t *testing.T, s *Slots[int], attempts, wonLast int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		a, w := s.Waiting()
		if a == attempts && w == wonLast {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting (Attempt, WonLast): %d, %d; want %d, %d", a, w, attempts, wonLast)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
}

// No more than Limit attempts are in flight; a lone attempt goes at once and
// alone; attempts on names won last go before the others, and the others do
// not wait for those in flight while a slot is free: a won-last attempt may
// hang on a row another transaction holds.
func TestSlotsOrder(t *testing.T) {
	s := New[int](3, 2, 1, 0)
	a1, a2 := granted(t, request(s, Attempt, 1)), granted(t, request(s, Attempt, 2))
	if a1.Rider || a2.Rider || len(a1.Riders)+len(a2.Riders) != 0 {
		t.Fatalf("lone attempts got %+v, %+v; want a slot each, alone", a1, a2)
	}
	waiting := request(s, Attempt, 3)
	queued(t, s, 1, 0)
	again := request(s, WonLast, 4)
	queued(t, s, 1, 1)
	notGranted(t, waiting)
	notGranted(t, again)
	a1.Done()
	againDone := granted(t, again) // before the attempt that waited longer
	notGranted(t, waiting)
	a2.Done()
	waitingDone := granted(t, waiting) // beside the won-last attempt in flight
	againDone.Done()
	waitingDone.Done()
	if s.used != [kinds]int{} {
		t.Fatalf("slots left in use: %d", s.used)
	}
}

// When a slot frees, the next attempt takes the queue with it, up to Batch
// in all; the riders hold no slot.
func TestSlotsBatch(t *testing.T) {
	s := New[int](2, 1, 3, 0)
	first := granted(t, request(s, Attempt, 0))
	var waiting []<-chan Grant[int]
	for v := 1; v <= 4; v++ {
		waiting = append(waiting, request(s, Attempt, v))
	}
	queued(t, s, 4, 0)
	first.Done()
	var leaders, riders int
	var carried []int
	var leader Grant[int]
	for range 3 {
		g := receiveAny(t, waiting)
		if g.Rider {
			riders++
			continue
		}
		leaders++
		leader = g
		carried = append(carried, g.Riders...)
	}
	if leaders != 1 || riders != 2 || len(carried) != 2 {
		t.Fatalf("a batch of %d leaders, %d riders carrying %v; want 1 leader carrying 2 riders", leaders, riders, carried)
	}
	queued(t, s, 1, 0)
	if s.used != [kinds]int{Attempt: 1} {
		t.Fatalf("in flight: %v; want the leader's 1", s.used)
	}
	leader.Done()
	last := receiveAny(t, waiting)
	if last.Rider || len(last.Riders) != 0 {
		t.Fatalf("the last attempt: %+v; want a slot of its own", last)
	}
	last.Done()
	if s.used != [kinds]int{} {
		t.Fatalf("slots left in use: %d", s.used)
	}
}

// receiveAny waits for the next grant on any of chans.
func receiveAny(t *testing.T, chans []<-chan Grant[int]) Grant[int] {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		for _, c := range chans {
			select {
			case g := <-c:
				return g
			default:
			}
		}
		select {
		case <-deadline:
			t.Fatal("no grant")
		case <-time.After(time.Millisecond): // poll interval
		}
	}
}

// A batch of attempts on names won last carries only those: the others wait
// for the next slot.
func TestSlotsBatchOfWonLastAlone(t *testing.T) {
	s := New[int](2, 1, 3, 0)
	first := granted(t, request(s, Attempt, 0))
	chans := []<-chan Grant[int]{request(s, Attempt, 1), request(s, Attempt, 2)}
	queued(t, s, 2, 0)
	chans = append(chans, request(s, WonLast, 3), request(s, WonLast, 4))
	queued(t, s, 2, 2)
	first.Done()
	var lead Grant[int]
	for range 2 {
		if g := receiveAny(t, chans); !g.Rider {
			lead = g
		}
	}
	a, w := s.Waiting()
	if a != 2 || w != 0 || len(lead.Riders) != 1 || lead.Riders[0] < 3 {
		t.Fatalf("after the batch: %d attempts and %d won-last wait, riders %v; want the won-last pair alone", a, w, lead.Riders)
	}
	lead.Done()
	// Leader and rider are granted at once: either may be received first.
	next, other := receiveAny(t, chans), receiveAny(t, chans)
	if next.Rider {
		next, other = other, next
	}
	if next.Rider || len(next.Riders) != 1 || !other.Rider {
		t.Fatalf("the next grants: %+v, %+v; want the two others together", next, other)
	}
	next.Done()
}

// A waiter gives up with its context's cause, or ErrLate at its end, and
// holds nothing after.
func TestSlotsWaitEnds(t *testing.T) {
	s := New[int](2, 1, 8, 0)
	g, err := s.Acquire(context.Background(), Attempt, 0, 0, time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("stop")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	for k := range kinds {
		if _, err := s.Acquire(ctx, k, 1, 1, time.Time{}, time.Time{}); !errors.Is(err, cause) {
			t.Fatalf("acquire(kind %d): %v, want the cause", k, err)
		}
	}
	soon, later := time.Now().Add(time.Millisecond), time.Now().Add(time.Hour)
	if _, err := s.Acquire(context.Background(), Attempt, 2, 2, soon, later); !errors.Is(err, ErrLate) {
		t.Fatalf("attempt past its window: %v, want ErrLate", err)
	}
	if _, err := s.Acquire(context.Background(), WonLast, 3, 3, later, soon); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("attempt past its deadline: %v, want DeadlineExceeded", err)
	}
	g.Done()
	if a, w := s.Waiting(); s.used != [kinds]int{} || a+w != 0 {
		t.Fatal("a waiter that gave up is still counted")
	}
}

// Waiting attempts go round the ring of keys from the instance's start: two
// instances with different starts send different attempts first.
func TestSlotsRingOrder(t *testing.T) {
	for _, tc := range []struct {
		start uint64
		want  []int
	}{
		{0, []int{10, 20, 30, 40}},
		{25, []int{30, 40, 10, 20}},
	} {
		s := New[int](2, 1, 2, tc.start)
		first := granted(t, request(s, Attempt, 0))
		var chans []<-chan Grant[int]
		for _, v := range []int{30, 10, 40, 20} {
			chans = append(chans, request(s, Attempt, v))
		}
		queued(t, s, 4, 0)
		first.Done()
		var got []int
		for range 2 { // two batches of two
			var lead Grant[int]
			for range 2 {
				if g := receiveAny(t, chans); !g.Rider {
					lead = g
				}
			}
			a, _ := s.Waiting()
			got = append(got, lead.Riders...)
			if a == 2 {
				s.mu.Lock()
				for _, w := range s.waiting[Attempt] {
					got = append(got, -int(w.key+tc.start)) // still waiting, as negatives
				}
				s.mu.Unlock()
			}
			lead.Done()
		}
		if got[0] != tc.want[0] && got[0] != tc.want[1] {
			t.Errorf("start %d: first batch carried %v; want one of %v", tc.start, got[0], tc.want[:2])
		}
		if -got[1] != tc.want[2] && -got[1] != tc.want[3] {
			t.Errorf("start %d: left waiting after the first batch %v; want %v", tc.start, got[1:3], tc.want[2:])
		}
	}
}

// A release or an extension goes at once beside attempts at their limit, and,
// once every place is taken, before the attempts waiting when one frees; the
// slots stay within Size.
func TestSlotsHeldNeverBehindAttempts(t *testing.T) {
	s := New[int](3, 2, 1, 0)
	a1, a2 := granted(t, request(s, Attempt, 1)), granted(t, request(s, Attempt, 2))
	h1, err := s.AcquireHeld(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	waiting := request(s, Attempt, 3)
	queued(t, s, 1, 0)
	held := make(chan func(), 1)
	go func() {
		if done, err := s.AcquireHeld(context.Background()); err == nil {
			held <- done
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for { // the second release waits: every place is taken
		s.mu.Lock()
		n := len(s.heldQ)
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second release did not wait")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	a1.Done()
	var h2 func()
	select {
	case h2 = <-held:
	case <-time.After(5 * time.Second):
		t.Fatal("the release did not get the freed place")
	}
	notGranted(t, waiting)
	h1()
	granted(t, waiting).Done()
	h2()
	a2.Done()
	if s.used != [kinds]int{} || s.held != 0 {
		t.Fatalf("left in use: attempts %v, held %d", s.used, s.held)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done, err := s.AcquireHeld(ctx)
	if err != nil {
		t.Fatalf("a free place: %v", err)
	}
	done()
}
