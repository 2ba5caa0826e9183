package shedlocktest

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

func (p controlled) runNow(t *testing.T, name string) int64 {
	t.Helper()
	n, err := p.c.RunNow(context.Background(), name)
	if err != nil {
		t.Fatalf("RunNow(%q): %v", name, err)
	}
	return n
}

// requests checks that RunRequests of names, in one call, is want.
func (p controlled) requests(t *testing.T, want map[string]int64, names ...string) {
	t.Helper()
	got, err := p.r.RunRequests(context.Background(), names)
	if err != nil {
		t.Fatalf("RunRequests(%q): %v", names, err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("RunRequests(%q) = %v; want %v (names without requests absent)", names, got, want)
	}
}

func testRunNowCounts(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	a.requests(t, map[string]int64{}, "job", "other", "none")
	a.requests(t, map[string]int64{})
	for i := int64(1); i <= 3; i++ {
		if n := a.runNow(t, "job"); n != i {
			t.Fatalf("RunNow call %d: %d pending; want %d (each call is one request)", i, n, i)
		}
	}
	if n := b.runNow(t, "other"); n != 1 {
		t.Fatalf("RunNow of another name: %d pending; want 1", n)
	}
	if n := b.runNow(t, "job"); n != 4 {
		t.Fatalf("RunNow by a second provider: %d pending; want 4", n)
	}
	a.requests(t, map[string]int64{"job": 4, "other": 1}, "job", "other", "none")
	b.requests(t, map[string]int64{"other": 1}, "other")
	b.pause(t, "job", time.Time{}) // a pause keeps the requests, for after Resume
	a.requests(t, map[string]int64{"job": 4}, "job")
}

func testRunNowConcurrent(t *testing.T, newProvider NewProviderFunc) {
	const providers, calls = 3, 10
	var wg sync.WaitGroup
	errs := make(chan error, providers*calls)
	ps := make([]controlled, providers)
	for i := range ps {
		ps[i] = newControlled(t, newProvider)
	}
	for _, p := range ps {
		for range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.c.RunNow(context.Background(), "job"); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("RunNow: %v", err)
	}
	ps[0].requests(t, map[string]int64{"job": providers * calls}, "job")
}

// runDone calls RunDone and checks that what is left pending is want.
func (p controlled) runDone(t *testing.T, l shedlock.Lock, wantErr error, want int64) {
	t.Helper()
	err := p.r.RunDone(context.Background(), "job", l)
	switch {
	case wantErr == nil && err != nil:
		t.Fatalf("RunDone while held: %v", err)
	case wantErr != nil && !errors.Is(err, wantErr):
		t.Fatalf("RunDone: want %v, got %v", wantErr, err)
	}
	wantMap := map[string]int64{}
	if want > 0 {
		wantMap["job"] = want
	}
	p.requests(t, wantMap, "job")
}

func testRunDone(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	ctx := context.Background()
	a.runNow(t, "job")
	a.runNow(t, "job")
	l := mustLock(t, a, cfg("job", time.Minute, 0))
	a.runDone(t, l, nil, 1)
	a.runDone(t, l, nil, 1) // the same run again (a retry): one acquisition marks one request
	if err := l.Extend(ctx, time.Minute, 0); err != nil {
		t.Fatalf("Extend after RunDone: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after RunDone: %v", err)
	}
	a.runNow(t, "job")
	b.runDone(t, l, shedlock.ErrLockLost, 2) // released: no longer held

	other := mustLock(t, b, cfg("other", time.Minute, 0))
	if err := b.r.RunDone(ctx, "job", other); err == nil {
		t.Fatalf("RunDone of %q with the lock of another name: nil; want an error", "job")
	}
	a.requests(t, map[string]int64{"job": 2}, "job")

	l2 := mustLock(t, b, cfg("job", time.Minute, 0))
	b.runDone(t, l, shedlock.ErrLockLost, 2) // another acquisition holds it
	a.runDone(t, l2, nil, 1)                 // any provider marks a run of any
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l3 := mustLock(t, a, cfg("job", time.Minute, 0))
	a.runDone(t, l3, nil, 0)
	if err := l3.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	l4 := mustLock(t, b, cfg("job", time.Minute, 0))
	b.runDone(t, l4, nil, 0) // none left: nothing to mark, never below 0
	if n := a.runNow(t, "job"); n != 1 {
		t.Fatalf("RunNow after every request was run: %d pending; want 1", n)
	}
}

// testRunDoneExpired: a run whose lock ran out, and was taken by another
// since, marks nothing.
func testRunDoneExpired(t *testing.T, newProvider NewProviderFunc) {
	a, b := newControlled(t, newProvider), newControlled(t, newProvider)
	a.runNow(t, "job")
	l := mustLock(t, a, cfg("job", 200*time.Millisecond, 0))
	lockWithin(t, b, cfg("job", time.Minute, 0), 10*time.Second)
	a.runDone(t, l, shedlock.ErrLockLost, 1)
}
