package shedlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

func newLeader(t *testing.T, p shedlock.LockProvider, lease time.Duration, opts ...shedlock.LeaderOption) *shedlock.Leader {
	t.Helper()
	l, err := shedlock.NewLeader(p, "group", lease, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Stop(context.Background()) })
	return l
}

// waitLeading polls until one of leaders leads, and returns it.
func waitLeading(t *testing.T, within time.Duration, leaders ...*shedlock.Leader) *shedlock.Leader {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, l := range leaders {
			if l.IsLeader() {
				return l
			}
		}
		time.Sleep(time.Millisecond) // a poll with a deadline
	}
	t.Fatalf("no leader within %v", within)
	return nil
}

func TestNewLeaderRefusesBadInput(t *testing.T) {
	t.Parallel()
	p := shedlocktest.NewMemoryStore().Provider("a")
	cases := []struct {
		p     shedlock.LockProvider
		name  string
		lease time.Duration
		opts  []shedlock.LeaderOption
		want  error
	}{
		{nil, "g", time.Second, nil, shedlock.ErrInvalidOption},
		{p, "", time.Second, nil, shedlock.ErrInvalidConfig},
		{p, strings.Repeat("x", 65), time.Second, nil, shedlock.ErrInvalidConfig},
		{p, "g", shedlock.MinLeaderLease - 1, nil, shedlock.ErrInvalidConfig},
		{p, "g", time.Second, []shedlock.LeaderOption{nil}, shedlock.ErrInvalidOption},
		{p, "g", time.Second, []shedlock.LeaderOption{shedlock.WithLeaderRetryPeriod(0)}, shedlock.ErrInvalidOption},
		{p, "g", time.Second, []shedlock.LeaderOption{shedlock.WithLeaderRenewPeriod(-1)}, shedlock.ErrInvalidOption},
		// The renewal must come before the context's end: a tenth of the lease before the lease's.
		{p, "g", time.Second, []shedlock.LeaderOption{shedlock.WithLeaderRenewPeriod(900 * time.Millisecond)}, shedlock.ErrInvalidOption},
		{p, "g", time.Second, []shedlock.LeaderOption{shedlock.WithLeaderLogger(nil)}, shedlock.ErrInvalidOption},
		{p, "g", time.Second, []shedlock.LeaderOption{shedlock.WithLeaderListener(nil)}, shedlock.ErrInvalidOption},
	}
	for i, c := range cases {
		if _, err := shedlock.NewLeader(c.p, c.name, c.lease, c.opts...); !errors.Is(err, c.want) {
			t.Errorf("case %d: want %v, got %v", i, c.want, err)
		}
	}
	if _, err := shedlock.NewLeader(p, "g", time.Second, shedlock.WithLeaderRenewPeriod(899*time.Millisecond)); err != nil {
		t.Errorf("a renewal just inside the margin: %v", err)
	}
}

// A leader that stops gracefully is replaced within one retry period, and its
// context ends with ErrStopped before the release.
func TestLeaderStopHandsOverWithinOneRetry(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const retry = 20 * time.Millisecond
	a := newLeader(t, store.Provider("a"), time.Minute, shedlock.WithLeaderRetryPeriod(retry))
	b := newLeader(t, store.Provider("b"), time.Minute, shedlock.WithLeaderRetryPeriod(retry))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b.Start()
	ctxA, _ := a.Context()
	fenceA, ok := shedlock.FenceFromContext(ctxA)
	if !ok || shedlock.AssertLocked(ctxA) != nil {
		t.Fatalf("the leadership's context carries the term's lock: fence %d %v, %v", fenceA, ok, shedlock.AssertLocked(ctxA))
	}
	stopped := time.Now()
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(context.Cause(ctxA), shedlock.ErrStopped) || a.IsLeader() {
		t.Fatalf("after Stop: cause %v, leading %v", context.Cause(ctxA), a.IsLeader())
	}
	if err := shedlock.AssertLocked(ctxA); !errors.Is(err, shedlock.ErrLockLost) {
		t.Fatalf("AssertLocked on an ended term: %v", err)
	}
	waitLeading(t, 5*time.Second, b)
	// One retry period, and the scheduling of two goroutines on a busy machine.
	if took := time.Since(stopped); took > retry+200*time.Millisecond {
		t.Errorf("b led %v after a's Stop; want within one retry (%v)", took, retry)
	}
	ctxB, _ := b.Context()
	if fenceB, _ := shedlock.FenceFromContext(ctxB); fenceB <= fenceA {
		t.Errorf("b's term has token %d, not above a's %d", fenceB, fenceA)
	}
}

// A leader cut off from its store (as a partitioned or frozen pod) keeps no
// lease it cannot renew: its context ends with a cause wrapping ErrLockLost
// before the lease ends in the store, so before another instance can lead.
func TestLeaderCutOffEndsBeforeAnotherLeads(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease, retry = 300 * time.Millisecond, 5 * time.Millisecond
	cutA := &countingProvider{p: store.Provider("a")}
	a := newLeader(t, cutA, lease, shedlock.WithLeaderRetryPeriod(retry))
	b := newLeader(t, store.Provider("b"), lease, shedlock.WithLeaderRetryPeriod(retry))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b.Start()
	ctxA, _ := a.Context()
	var aEnded, bLed atomic.Int64
	context.AfterFunc(ctxA, func() { aEnded.Store(time.Now().UnixNano()) })
	cutA.cut.Store(true)
	cut := time.Now()
	waitLeading(t, 5*time.Second, b)
	bLed.Store(time.Now().UnixNano())
	<-ctxA.Done()
	if !errors.Is(context.Cause(ctxA), shedlock.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", context.Cause(ctxA))
	}
	deadline := time.Now().Add(time.Second)
	for aEnded.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // a poll with a deadline: AfterFunc runs in a goroutine
	}
	if aEnded.Load() == 0 || aEnded.Load() >= bLed.Load() {
		t.Fatalf("a's context ended at %d, b led at %d: a must stop first", aEnded.Load(), bLed.Load())
	}
	if took := time.Since(cut); took > lease+retry+300*time.Millisecond {
		t.Errorf("b led %v after a was cut off; want within lease+retry (%v)", took, lease+retry)
	}
}

// At most one of several leaders leads at any moment: each writes its term's
// token to a row that refuses an older one, and no write is refused.
func TestLeadersNeverOverlap(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	const lease, retry = 150 * time.Millisecond, 2 * time.Millisecond
	var (
		mu              sync.Mutex
		rowFence        int64
		writes, refused int
		leaders         []*shedlock.Leader
		stopWriting     = make(chan struct{})
		writersDone     sync.WaitGroup
		providers       []*countingProvider
	)
	for i := range 4 {
		cp := &countingProvider{p: store.Provider(string(rune('a' + i)))}
		providers = append(providers, cp)
		l := newLeader(t, cp, lease, shedlock.WithLeaderRetryPeriod(retry))
		leaders = append(leaders, l)
		l.Start()
		writersDone.Add(1)
		go func() {
			defer writersDone.Done()
			for {
				select {
				case <-stopWriting:
					return
				default:
				}
				time.Sleep(200 * time.Microsecond) // the pace of the writes, not a wait for anything
				ctx, leading := l.Context()
				if !leading {
					continue
				}
				fence, _ := shedlock.FenceFromContext(ctx)
				mu.Lock()
				if fence >= rowFence { // UPDATE ... WHERE fence <= ?
					rowFence = fence
					writes++
				} else {
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	// Cut the leader off, again and again: the next must wait for its lease.
	for range 5 {
		leader := waitLeading(t, 5*time.Second, leaders...)
		for i, l := range leaders {
			if l == leader {
				providers[i].cut.Store(true)
				ctx, _ := l.Context()
				<-ctx.Done()
				providers[i].cut.Store(false)
			}
		}
	}
	close(stopWriting)
	writersDone.Wait()
	if refused != 0 || writes == 0 {
		t.Fatalf("%d writes, %d refused: an older term wrote after a newer one", writes, refused)
	}
}

// Listeners get each term as a gained and a lost event, with its token.
func TestLeaderEvents(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []shedlock.Event
	listen := shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})
	store := shedlocktest.NewMemoryStore()
	l := newLeader(t, store.Provider("a"), time.Minute, shedlock.WithLeaderListener(listen))
	l.Start()
	waitLeading(t, 5*time.Second, l)
	if err := l.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Kind != shedlock.EventLeadershipGained || got[1].Kind != shedlock.EventLeadershipLost {
		t.Fatalf("events %v", got)
	}
	if got[0].Config.Name != "group" || got[0].Fence == 0 || got[0].Run != got[1].Run || !errors.Is(got[1].Err, shedlock.ErrStopped) {
		t.Errorf("gained %+v, lost %+v", got[0], got[1])
	}
	if got[0].Kind.String() != "leadership_gained" {
		t.Errorf("kind %q", got[0].Kind.String())
	}
}

// Stop waits for the jobs running under the leader before it releases the
// lease: no job of the old leader runs beside the new one's.
func TestLeaderStopWaitsForJobs(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	a := newLeader(t, store.Provider("a"), time.Minute, shedlock.WithLeaderRetryPeriod(time.Millisecond))
	b := newLeader(t, store.Provider("b"), time.Minute, shedlock.WithLeaderRetryPeriod(time.Millisecond))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b.Start()
	started, overlapped := make(chan struct{}), make(chan bool, 1)
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		// Finishing up after the end of the term: b must not lead meanwhile.
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
			if b.IsLeader() {
				overlapped <- true
				return nil
			}
			time.Sleep(time.Millisecond) // a poll with a deadline
		}
		overlapped <- false
		return nil
	}))
	go job.Run()
	<-started
	if err := a.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if <-overlapped {
		t.Fatal("b led while a's job still ran")
	}
	waitLeading(t, 5*time.Second, b)
}
