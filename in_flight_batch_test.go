package shedlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// batchProvider is a scriptedProvider that also takes batches, recording
// each batch's names.
type batchProvider struct {
	scriptedProvider
	batchErr error
	batches  [][]string
}

func (p *batchProvider) TryLockBatch(_ context.Context, cfgs []LockConfig) ([]LockResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, len(cfgs))
	results := make([]LockResult, len(cfgs))
	for i, c := range cfgs {
		names[i] = c.Name
		if err := p.answers[c.Name]; err != nil {
			results[i].Err = err
		} else {
			results[i].Lock = nopLock{}
		}
	}
	p.batches = append(p.batches, names)
	if p.batchErr != nil {
		return nil, p.batchErr
	}
	return results, nil
}

// tick runs names at once on ex while the blocker's attempt holds the only
// slot, so that they queue, then lets the blocker go; it returns each run's
// outcome.
func tick(t *testing.T, p *batchProvider, ex *Executor, names []string) (ran []bool, errs []error) {
	t.Helper()
	blocked := make(chan struct{})
	go func() { defer close(blocked); runOnce(t, ex, "blocker") }()
	<-p.holding
	ran, errs = make([]bool, len(names)), make([]error, len(names))
	var wg sync.WaitGroup
	wg.Add(len(names))
	for i, n := range names {
		go func() {
			defer wg.Done()
			ran[i], errs[i] = ex.Run(context.Background(), LockConfig{Name: n, LockAtMostFor: time.Minute},
				func(context.Context) error { return nil })
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for !queued(ex.attempts.inFlight(), len(names)) {
		if time.Now().After(deadline) {
			t.Fatal("the tick's attempts did not all queue within 10s")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	close(p.release)
	wg.Wait()
	<-blocked
	return ran, errs
}

func newBatchProvider() *batchProvider {
	return &batchProvider{scriptedProvider: scriptedProvider{answers: map[string]error{}, hold: "blocker",
		holding: make(chan struct{}), release: make(chan struct{})}}
}

// Attempts that queue go together, in batches of up to maxBatch, each with
// its own answer; a lone attempt goes alone.
func TestQueuedAttemptsGoInOneBatch(t *testing.T) {
	t.Parallel()
	p := newBatchProvider()
	ex := NewExecutor(p, WithMaxInFlight(2)) // one attempt in flight
	names := make([]string, 100)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
		if i%2 == 1 {
			p.answer(names[i], ErrNotAcquired)
		}
	}
	ran, errs := tick(t, p, ex, names)
	for i := range names {
		if errs[i] != nil || ran[i] != (i%2 == 0) {
			t.Errorf("%s: ran %v, %v; want ran %v", names[i], ran[i], errs[i], i%2 == 0)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	sent := map[string]int{}
	for _, b := range p.batches {
		for _, n := range b {
			sent[n]++
		}
	}
	want := (len(names) + maxBatch - 1) / maxBatch
	if len(p.batches) != want || len(sent) != len(names) || slices.Max(batchSizes(p.batches)) > maxBatch {
		t.Fatalf("batches sent: %d of sizes %v, %d names; want %d of at most %d, every name once",
			len(p.batches), batchSizes(p.batches), len(sent), want, maxBatch)
	}
	if len(p.order) != 1 || p.order[0] != "blocker" {
		t.Fatalf("attempts sent alone: %v; want the lone blocker's only", p.order)
	}
}

// A batch that fails is every one of its attempts' store error; none runs.
func TestBatchErrorReachesEveryAttempt(t *testing.T) {
	t.Parallel()
	p := newBatchProvider()
	p.batchErr = errStore
	ex := NewExecutor(p, WithMaxInFlight(1))
	names := []string{"a", "b", "c"}
	ran, errs := tick(t, p, ex, names)
	for i := range names {
		if ran[i] || !errors.Is(errs[i], errStore) {
			t.Errorf("%s: ran %v, %v; want the batch's error", names[i], ran[i], errs[i])
		}
	}
}

func batchSizes(batches [][]string) []int {
	sizes := make([]int, len(batches))
	for i, b := range batches {
		sizes[i] = len(b)
	}
	return sizes
}
