package shedlockredis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// batchTally is what the runs of one name saw.
type batchTally struct {
	runs     atomic.Int64 // completed runs: the truth
	counter  atomic.Int64 // read, slept on, written back: loses updates on overlap
	holders  atomic.Int64 // providers holding the name right now
	overlaps atomic.Int64 // acquisitions that found another holder
}

// TestBatchContention has providers, each with a client of its own, batch
// overlapping sets of names, in shuffled orders, for a few seconds: no name
// ever has two holders, no counter loses an update, and every name and every
// provider gets runs.
func TestBatchContention(t *testing.T) {
	t.Parallel()
	const providers, names, perBatch = 6, 8, 4
	env := newEnv(t)
	tallies := make([]batchTally, names)
	wins := make([]atomic.Int64, providers)
	var errs sync.Map
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for pi := range providers {
		p := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := batchRound(ctx, p, tallies, perBatch, &wins[pi]); err != nil && ctx.Err() == nil {
					errs.Store(pi, err)
					return
				}
			}
		}()
	}
	wg.Wait()

	errs.Range(func(pi, err any) bool {
		t.Errorf("provider %d: %v", pi, err)
		return true
	})
	for ni := range tallies {
		tl := &tallies[ni]
		runs, counter := tl.runs.Load(), tl.counter.Load()
		t.Logf("name %d: %d runs, counter %d, overlaps %d", ni, runs, counter, tl.overlaps.Load())
		assert.Zero(t, tl.overlaps.Load(), "name %d had two holders at once", ni)
		assert.Equal(t, runs, counter, "name %d: updates lost to overlapping runs", ni)
		assert.Positive(t, runs, "name %d never taken", ni)
	}
	for pi := range wins {
		assert.Positive(t, wins[pi].Load(), "provider %d never took a lock: providers are not competing", pi)
	}
}

// batchRound takes a batch of perBatch names that wraps around from a random
// one, in a random order, runs each name it got, and unlocks them.
func batchRound(ctx context.Context, p *shedlockredis.Provider, tallies []batchTally, perBatch int, wins *atomic.Int64) error {
	first := rand.IntN(len(tallies))
	idx := make([]int, perBatch)
	for i := range idx {
		idx[i] = (first + i) % len(tallies)
	}
	rand.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	cfgs := make([]shedlock.LockConfig, len(idx))
	for i, ni := range idx {
		cfgs[i] = shedlock.LockConfig{Name: fmt.Sprintf("contention-%d", ni), LockAtMostFor: time.Minute}
	}
	res, err := p.TryLockBatch(ctx, cfgs)
	if err != nil {
		return fmt.Errorf("TryLockBatch: %w", err)
	}
	var held []int
	for i, r := range res {
		switch {
		case r.Err == nil:
			held = append(held, i)
			if tallies[idx[i]].holders.Add(1) > 1 {
				tallies[idx[i]].overlaps.Add(1)
			}
		case !errors.Is(r.Err, shedlock.ErrNotAcquired):
			return fmt.Errorf("%s: %w", cfgs[i].Name, r.Err)
		}
	}
	for _, i := range held {
		tl := &tallies[idx[i]]
		v := tl.counter.Load()
		time.Sleep(100 * time.Microsecond) // the window a second holder would fall into
		tl.counter.Store(v + 1)
		tl.runs.Add(1)
		wins.Add(1)
	}
	for _, i := range held {
		tallies[idx[i]].holders.Add(-1) // before the Unlock lets the next holder in
		if err := res[i].Lock.Unlock(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("Unlock %s: %w", cfgs[i].Name, err)
		}
	}
	return nil
}
