package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// A service with a lock per tenant uses names without end: what the provider
// remembers of them stays bounded, and a name in use keeps its one-statement
// acquisition however many other names come and go.
func TestNameStateBounded(t *testing.T) {
	store := newFakeStore()
	e := testEngine(t, store)
	ctx := context.Background()
	cycle := func(name string) int {
		before := store.count()
		l, err := e.TryLock(ctx, name, time.Hour, 0)
		if err != nil {
			t.Fatalf("TryLock(%q): %v", name, err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock(%q): %v", name, err)
		}
		return store.count() - before
	}
	cycle("hot")
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const names = 100_000
	for i := range names {
		cycle(fmt.Sprintf("tenant-%06d", i))
		if i%1000 == 0 {
			if n := cycle("hot"); n != 2 {
				t.Fatalf("after %d other names, a cycle of the name in use sent %d statements, want 2", i, n)
			}
		}
	}
	if n := e.names.len(); n > nameCacheSize {
		t.Fatalf("%d names remembered after %d distinct names, want at most %d", n, names+1, nameCacheSize)
	}
	store.rows = map[string]string{} // the fake's own table is not the provider's memory
	runtime.GC()
	runtime.ReadMemStats(&m1)
	grown := int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	t.Logf("heap grew by %d bytes over %d names; %d remembered", grown, names, e.names.len())
	if limit := int64(nameCacheSize * 1024); grown > limit {
		t.Fatalf("heap grew by %d bytes over %d names, want under %d", grown, names, limit)
	}
	// A forgotten name costs its next cycle the name check and the INSERT, once
	// (the fake's rows were cleared above, so the INSERT takes the lock).
	if n := cycle("tenant-000000"); n != 3 {
		t.Fatalf("first cycle of a forgotten name sent %d statements, want 3 (check, insert, release)", n)
	}
	if n := cycle("tenant-000000"); n != 2 {
		t.Fatalf("next cycle sent %d statements, want 2", n)
	}
}

// Two spellings that the column's collation makes one row are refused by one
// provider: two jobs under them would block each other.
func TestNameCacheRefusesSecondSpelling(t *testing.T) {
	store := newFakeStore()
	store.keyFunc = func(s string) string { return fmt.Sprint(len(s)) } // a coarse collation
	e := testEngine(t, store)
	if _, err := e.TryLock(context.Background(), "job", time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	_, err := e.TryLock(context.Background(), "JOB", time.Hour, 0)
	if !errors.Is(err, lockerr.InvalidConfig) {
		t.Fatalf("second spelling of one row: want InvalidConfig, got %v", err)
	}
}

// With an upserting store a name's first acquisition is one statement, taken
// or not: a held lock costs no UPDATE after the INSERT.
func TestUpsertStoreFirstUseIsOneStatement(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	store.upserts = true
	holder, other := testEngine(t, store), testEngine(t, store)
	l, err := holder.TryLock(ctx, "job", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := store.count()
	if _, err := other.TryLock(ctx, "job", time.Hour, 0); !errors.Is(err, lockerr.NotAcquired) {
		t.Fatalf("held lock: want NotAcquired, got %v", err)
	}
	if n := store.count() - before; n != 2 || store.updates != 0 {
		t.Fatalf("first attempt on a held name sent %d statements (%d UPDATEs), want 2: the name check and the upsert", n, store.updates)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx, "job", time.Hour, 0); err != nil {
		t.Fatalf("released lock: %v", err)
	}
}

// A lock knows, without asking its store, when it can no longer be relied on:
// after its Unlock, after an Extend found it taken, and past its end.
func TestLockCheckHeld(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	e := testEngine(t, store)
	l, err := e.TryLock(ctx, "job", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CheckHeld(); err != nil {
		t.Fatalf("fresh lock: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckHeld(); !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("after Unlock: want LockLost, got %v", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("second Unlock: want LockLost, got %v", err)
	}

	short, err := e.TryLock(ctx, "short", 20*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for short.CheckHeld() == nil && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if err := short.CheckHeld(); !errors.Is(err, lockerr.LockExpired) {
		t.Fatalf("past its end: want LockExpired, got %v", err)
	}

	taken, err := e.TryLock(ctx, "taken", time.Hour, 0)
	if err != nil {
		t.Fatal(err)
	}
	store.mu.Lock()
	store.rows["taken"] = "someone else"
	store.mu.Unlock()
	if err := taken.Extend(ctx, time.Hour, 0); !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("Extend of a taken lock: want LockLost, got %v", err)
	}
	if err := taken.CheckHeld(); !errors.Is(err, lockerr.LockLost) {
		t.Fatalf("after a refused Extend: want LockLost, got %v", err)
	}
}

// Lock times are kept to the millisecond: a duration is rounded up, never down.
func TestCeilMillis(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		time.Millisecond:                   time.Millisecond,
		time.Millisecond + time.Nanosecond: 2 * time.Millisecond,
		1999 * time.Microsecond:            2 * time.Millisecond,
		time.Minute:                        time.Minute,
		0:                                  0,
		// Rounding up would wrap around to a negative duration.
		math.MaxInt64: time.Duration(math.MaxInt64).Truncate(time.Millisecond),
	} {
		if got := ceilMillis(in); got != want {
			t.Errorf("ceilMillis(%v) = %v, want %v", in, got, want)
		}
	}
}
