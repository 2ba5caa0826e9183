package shedlocktest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// Contention configures RunContention. Zero fields take the defaults noted.
type Contention struct {
	// Providers is how many provider instances compete, each made by one call of
	// the NewProviderFunc (its own owner and connections). Default 8.
	Providers int
	// Names is how many lock names they compete for at once. Default 2.
	Names int
	// RunsPerName is how many runs each name must see in total. Default 200.
	RunsPerName int
	// Hold is how long each run sleeps between reading and writing its counter:
	// the window in which a second holder would lose an update. Default 1ms.
	Hold time.Duration
	// Pause is how long a provider waits after its own run before competing for
	// that name again, as a fixed-delay job would. Default 2ms.
	Pause time.Duration
	// LockAtMostFor of every lock. Default 1 minute: far longer than a run, so no
	// lock may expire while held.
	LockAtMostFor time.Duration
	// Timeout bounds the whole run. Default 3 minutes.
	Timeout time.Duration
}

func (c Contention) withDefaults() Contention {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Providers, 8)
	def(&c.Names, 2)
	def(&c.RunsPerName, 200)
	defDur(&c.Hold, time.Millisecond)
	defDur(&c.Pause, 2*time.Millisecond)
	defDur(&c.LockAtMostFor, time.Minute)
	defDur(&c.Timeout, 3*time.Minute)
	return c
}

// nameTally is what the runs of one lock name observed.
type nameTally struct {
	runs     atomic.Int64 // completed runs, counted atomically: the truth
	counter  atomic.Int64 // read, slept on, written back: loses updates on overlap
	holders  atomic.Int64 // runs inside the critical section right now
	maxHeld  atomic.Int64 // the most holders ever seen at once
	overlaps atomic.Int64 // runs that found another holder inside
	lost     atomic.Int64 // Unlocks that found the lock no longer theirs
}

// RunContention makes c.Providers providers on one store and has all of them
// compete for c.Names lock names until each name has seen c.RunsPerName runs.
//
// Every run is a read-sleep-write of a counter that nothing but the lock protects
// (an overlap loses an update) and an atomic count of holders (an overlap is
// seen as two). It fails t when two runs of a name ever overlapped, when a
// counter lost an update, when a total is not exactly c.RunsPerName, when some
// provider never got a lock, or on any store error. Run it against your own
// provider like Run:
//
//	func TestMyProviderContention(t *testing.T) {
//		shedlocktest.RunContention(t, newMyStore, shedlocktest.Contention{})
//	}
func RunContention(t *testing.T, newStore NewStoreFunc, c Contention) {
	t.Helper()
	c = c.withDefaults()
	newProvider := newStore(t)
	providers := make([]shedlock.LockProvider, c.Providers)
	for i := range providers {
		providers[i] = newProvider(t)
	}
	tallies := make([]nameTally, c.Names)
	wins := make([]atomic.Int64, c.Providers) // runs per provider, all names
	start := time.Now()
	for _, err := range competeAll(providers, c, tallies, wins) {
		t.Error(err)
	}
	for ni := range tallies {
		checkTally(t, ni, &tallies[ni], c)
	}
	perProvider := make([]int64, len(wins))
	for i := range wins {
		perProvider[i] = wins[i].Load()
		if perProvider[i] == 0 {
			t.Errorf("provider %d never got a lock in %d runs: providers are not competing", i, c.Names*c.RunsPerName)
		}
	}
	t.Logf("%d providers, %d names, %d runs in %v; runs per provider %v",
		c.Providers, c.Names, c.Names*c.RunsPerName, time.Since(start).Round(time.Millisecond), perProvider)
}

// competeAll has every provider compete for every name, each pair in a
// goroutine, until each name has its runs or c.Timeout ends; it returns
// their errors. One error stops the others.
func competeAll(providers []shedlock.LockProvider, c Contention, tallies []nameTally, wins []atomic.Int64) []error {
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeout)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(providers)*len(tallies))
	for pi, p := range providers {
		for ni := range tallies {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lockCfg := shedlock.LockConfig{
					Name:          fmt.Sprintf("contention-%d", ni),
					LockAtMostFor: c.LockAtMostFor,
				}
				if err := compete(ctx, p, lockCfg, c, &tallies[ni], &wins[pi]); err != nil {
					errs <- fmt.Errorf("provider %d, lock %q: %w", pi, lockCfg.Name, err)
					cancel() // one broken provider: stop the others rather than wait out Timeout
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return all
}

// checkTally fails t unless the runs of lock contention-ni never overlapped
// and add up to c.RunsPerName.
func checkTally(t *testing.T, ni int, tl *nameTally, c Contention) {
	t.Helper()
	runs, counter := tl.runs.Load(), tl.counter.Load()
	t.Logf("lock contention-%d: %d runs, counter %d, most holders at once %d, overlapping runs %d",
		ni, runs, counter, tl.maxHeld.Load(), tl.overlaps.Load())
	if n := tl.overlaps.Load(); n != 0 {
		t.Errorf("lock contention-%d: %d runs started while another provider held the lock (most at once: %d)",
			ni, n, tl.maxHeld.Load())
	}
	if n := tl.lost.Load(); n != 0 {
		t.Errorf("lock contention-%d: %d Unlocks found the lock taken by another provider during the run", ni, n)
	}
	if counter != runs {
		t.Errorf("lock contention-%d: counter %d after %d runs: %d updates lost to overlapping runs",
			ni, counter, runs, runs-counter)
	}
	if runs != int64(c.RunsPerName) {
		t.Errorf("lock contention-%d: %d runs, want exactly %d", ni, runs, c.RunsPerName)
	}
}

// compete runs one provider's loop for one name until the name has all its runs.
func compete(ctx context.Context, p shedlock.LockProvider, cfg shedlock.LockConfig, c Contention,
	tl *nameTally, wins *atomic.Int64) error {
	for tl.runs.Load() < int64(c.RunsPerName) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%d of %d runs done: %w", tl.runs.Load(), c.RunsPerName, err)
		}
		l, err := p.TryLock(ctx, cfg)
		if errors.Is(err, shedlock.ErrNotAcquired) {
			wait(ctx, rand.N(c.Pause)) // poll again soon, out of step with the others
			continue
		}
		if err != nil {
			return fmt.Errorf("TryLock: %w", err)
		}
		// Check the quota under the lock: with exclusion this count is exact, so a
		// total above RunsPerName is itself a sign of an overlap.
		if tl.runs.Load() < int64(c.RunsPerName) {
			criticalSection(c, tl)
			wins.Add(1)
		}
		// A lock lost under a run is counted, not fatal: the runs go on, so that
		// the totals show how far exclusion broke.
		if err := l.Unlock(context.WithoutCancel(ctx)); errors.Is(err, shedlock.ErrLockLost) {
			tl.lost.Add(1)
		} else if err != nil {
			return fmt.Errorf("Unlock: %w", err)
		}
		wait(ctx, c.Pause)
	}
	return nil
}

// criticalSection is one run. Load and Store are atomic one by one, so the race
// detector sees no data race, but the pair is not: only the lock keeps two runs
// from both reading the same value.
func criticalSection(c Contention, tl *nameTally) {
	if held := tl.holders.Add(1); held > 1 {
		tl.overlaps.Add(1)
		for m := tl.maxHeld.Load(); held > m && !tl.maxHeld.CompareAndSwap(m, held); m = tl.maxHeld.Load() {
		}
	} else if tl.maxHeld.Load() == 0 {
		tl.maxHeld.CompareAndSwap(0, 1)
	}
	v := tl.counter.Load()
	time.Sleep(c.Hold) // the window a second holder would fall into
	tl.counter.Store(v + 1)
	tl.runs.Add(1)
	tl.holders.Add(-1)
}

func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
