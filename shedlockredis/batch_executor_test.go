package shedlockredis_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// countingBatcher counts what an executor sends its provider.
type countingBatcher struct {
	*shedlockredis.Provider
	alone, batches atomic.Int64
}

func (c *countingBatcher) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	c.alone.Add(1)
	return c.Provider.TryLock(ctx, cfg)
}

func (c *countingBatcher) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	c.batches.Add(1)
	return c.Provider.TryLockBatch(ctx, cfgs)
}

// A herd through the executor: three pods fire the same 300 jobs at one
// tick, each with one attempt in flight, so that the attempts queue and go
// in batches. Every job runs exactly once, in about a tenth of a script per
// attempt.
func TestExecutorHerdGoesInBatches(t *testing.T) {
	t.Parallel()
	const pods, jobs = 3, 300
	env := newEnv(t)
	fire := time.Now()
	var mu sync.Mutex
	runs := map[string]int{}
	var calls atomic.Int64
	var wg sync.WaitGroup
	counters := make([]*countingBatcher, pods)
	for pod := range pods {
		counters[pod] = &countingBatcher{Provider: newProvider(t, newClient(t), shedlockredis.WithEnv(env))}
		ex := shedlock.NewExecutor(counters[pod], shedlock.WithMaxInFlight(2), shedlock.WithAcquireTimeout(time.Minute))
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		for j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				name := fmt.Sprintf("job-%d", j)
				_, err := ex.Run(shedlock.ContextWithFireTime(context.Background(), fire),
					shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute},
					func(context.Context) error {
						mu.Lock()
						runs[name]++
						mu.Unlock()
						return nil
					})
				assert.NoError(t, err)
			}()
		}
	}
	wg.Wait()
	for j := range jobs {
		assert.Equal(t, 1, runs[fmt.Sprintf("job-%d", j)], "runs of job-%d", j)
	}
	var batches int64
	for _, c := range counters {
		calls.Add(c.alone.Load() + c.batches.Load())
		batches += c.batches.Load()
	}
	require.Positive(t, batches, "no attempt went in a batch")
	assert.LessOrEqual(t, calls.Load(), int64(pods*jobs/10), "calls to the providers for %d attempts", pods*jobs)
}
