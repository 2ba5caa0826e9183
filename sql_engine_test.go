package shedlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

// countingStore is a sqlStore in memory that counts the statements sent.
type countingStore struct {
	mu      sync.Mutex
	rows    map[string]string // name -> token holding it; "" when free
	sent    int
	keyFunc func(string) string
}

func newCountingStore() *countingStore {
	return &countingStore{rows: map[string]string{}, keyFunc: func(s string) string { return s }}
}

func (s *countingStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// strings returns the name and token the engine sends as statement arguments.
func (a sqlArgs) strings() (name, token string) { return a.name.(string), a.token.(string) }

func (s *countingStore) insert(_ context.Context, a sqlArgs, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if _, ok := s.rows[name]; ok {
		return false, nil
	}
	s.rows[name] = token
	return true, nil
}

func (s *countingStore) update(_ context.Context, a sqlArgs, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if s.rows[name] != "" {
		return false, nil
	}
	s.rows[name] = token
	return true, nil
}

func (s *countingStore) release(_ context.Context, a sqlArgs, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	if s.rows[name] != token {
		return false, nil
	}
	s.rows[name] = ""
	return true, nil
}

func (s *countingStore) extend(_ context.Context, a sqlArgs, _ time.Duration) (bool, error) {
	name, token := a.strings()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	return s.rows[name] == token, nil
}

func (s *countingStore) nameKey(_ context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	return s.keyFunc(name), nil
}

func testEngine(t *testing.T, store sqlStore) *sqlEngine {
	t.Helper()
	o := defaultProviderOptions()
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	return newSQLEngine(o, store)
}

// A service with a lock per tenant uses names without end: what the provider
// remembers of them stays bounded, and a name in use keeps its one-statement
// acquisition however many other names come and go.
func TestNameStateBounded(t *testing.T) {
	store := newCountingStore()
	e := testEngine(t, store)
	ctx := context.Background()
	cycle := func(name string) int {
		before := store.count()
		l, err := e.tryLock(ctx, LockConfig{Name: name, LockAtMostFor: time.Hour})
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
	store := newCountingStore()
	store.keyFunc = func(s string) string { return fmt.Sprint(len(s)) } // a coarse collation
	e := testEngine(t, store)
	if _, err := e.tryLock(context.Background(), LockConfig{Name: "job", LockAtMostFor: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, err := e.tryLock(context.Background(), LockConfig{Name: "JOB", LockAtMostFor: time.Hour})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("second spelling of one row: want ErrInvalidConfig, got %v", err)
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
