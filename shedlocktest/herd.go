package shedlocktest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
)

// countingProvider counts what an executor sends its provider: attempts alone
// and batches.
type countingProvider struct {
	shedlock.LockProvider
	calls, batches atomic.Int64
	attempts       *atomic.Int64 // the pod's runs that reached the executor's queue
	gate           sync.Once
}

// TryLock holds the pod's first attempt until every run of the tick has told
// its attempt (EventAttempt comes just before the executor queues it), so that
// the others queue behind it, as they do behind a store that takes longer than
// a tick's goroutines take to start. A gate on the goroutines' start alone let
// a busy machine send most of them one by one, after the first.
func (c *countingProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	c.calls.Add(1)
	c.gate.Do(func() {
		deadline := time.Now().Add(10 * time.Second)
		for c.attempts.Load() < herdJobs && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // poll interval
		}
	})
	return c.LockProvider.TryLock(ctx, cfg)
}

// countingBatcher is a countingProvider of a BatchLocker.
type countingBatcher struct{ *countingProvider }

func (c countingBatcher) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	c.calls.Add(1)
	c.batches.Add(1)
	return c.LockProvider.(shedlock.BatchLocker).TryLockBatch(ctx, cfgs)
}

// testHerd fires the same jobs at one tick on three executors, each on a
// provider of its own with one attempt in flight, so that the attempts queue:
// every job runs exactly once. Where the provider is a BatchLocker, the queue
// goes in batches: the store sees about a tenth of a call per attempt.
const herdJobs = 150

func testHerd(t *testing.T, newProvider NewProviderFunc) {
	const pods, jobs = 3, herdJobs
	fire := time.Now()
	var mu sync.Mutex
	runs := map[string]int{}
	counters := make([]*countingProvider, pods)
	var wg sync.WaitGroup
	for pod := range pods {
		attempts := new(atomic.Int64)
		counters[pod] = &countingProvider{LockProvider: newProvider(t), attempts: attempts}
		var p shedlock.LockProvider = counters[pod]
		if _, ok := counters[pod].LockProvider.(shedlock.BatchLocker); ok {
			p = countingBatcher{counters[pod]}
		}
		ex := shedlock.NewExecutor(p, shedlock.WithMaxInFlight(2),
			shedlock.WithAcquireTimeout(time.Minute), shedlock.WithReleaseTimeout(time.Minute),
			shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
				if ev.Kind == shedlock.EventAttempt {
					attempts.Add(1)
				}
			})))
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		for j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("herd-%d", j)
				_, err := ex.Run(shedlock.ContextWithFireTime(context.Background(), fire),
					cfg(name, time.Minute, time.Minute), func(context.Context) error {
						mu.Lock()
						runs[name]++
						mu.Unlock()
						return nil
					})
				if err != nil {
					t.Errorf("Run(%s): %v", name, err)
				}
			}()
		}
	}
	wg.Wait()
	for j := range jobs {
		if n := runs[fmt.Sprintf("herd-%d", j)]; n != 1 {
			t.Errorf("herd-%d ran %d times at one tick of three pods, want once", j, n)
		}
	}
	var calls, batches int64
	for _, c := range counters {
		calls += c.calls.Load()
		batches += c.batches.Load()
	}
	if _, ok := counters[0].LockProvider.(shedlock.BatchLocker); !ok {
		return
	}
	if batches == 0 || calls > pods*jobs/10 {
		t.Errorf("%d calls to the providers (%d batches) for %d attempts; want batches, at most %d calls",
			calls, batches, pods*jobs, pods*jobs/10)
	}
}
