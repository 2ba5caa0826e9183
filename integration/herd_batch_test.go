package integration_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// countingBatcher counts what an executor sends its provider: attempts alone
// and batches.
type countingBatcher struct {
	shedlock.BatchLocker
	alone, batches, batched atomic.Int64
}

func (c *countingBatcher) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	c.alone.Add(1)
	return c.BatchLocker.TryLock(ctx, cfg)
}

func (c *countingBatcher) TryLockBatch(ctx context.Context, cfgs []shedlock.LockConfig) ([]shedlock.LockResult, error) {
	c.batches.Add(1)
	c.batched.Add(int64(len(cfgs)))
	return c.BatchLocker.TryLockBatch(ctx, cfgs)
}

// A herd through the executor on each SQL store: three pods fire the same
// 300 jobs at one tick, each pod with one attempt in flight, so that its
// attempts queue and go in batches. Every job runs exactly once, and the
// store sees about a tenth of a call per attempt.
func TestExecutorHerdGoesInBatches(t *testing.T) {
	t.Parallel()
	sqliteParams := strings.Replace(shedlock.SQLiteDSNParams, "busy_timeout(5000)", "busy_timeout(60000)", 1)
	for name, store := range map[string]shedlocktest.NewStoreFunc{
		"mysql":    mysqlStore(nil),
		"postgres": postgresStore(pgxClient, "", nil),
		"sqlite":   sqliteStoreWith(sqliteParams),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			newProvider := store(t)
			const pods, jobs = 3, 300
			fire := time.Now()
			var mu sync.Mutex
			runs := map[string]int{}
			counters := make([]*countingBatcher, pods)
			var wg sync.WaitGroup
			for pod := range pods {
				counters[pod] = &countingBatcher{BatchLocker: newProvider(t).(shedlock.BatchLocker)}
				ex := shedlock.NewExecutor(counters[pod], shedlock.WithMaxInFlight(2),
					shedlock.WithAcquireTimeout(time.Minute), shedlock.WithReleaseTimeout(time.Minute))
				t.Cleanup(func() { _ = ex.Stop(context.Background()) })
				for j := range jobs {
					wg.Go(func() {
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
					})
				}
			}
			wg.Wait()
			t.Logf("the tick took %v", time.Since(fire))
			for j := range jobs {
				assert.Equal(t, 1, runs[fmt.Sprintf("job-%d", j)], "runs of job-%d", j)
			}
			var calls, batched int64
			for pod, c := range counters {
				calls += c.alone.Load() + c.batches.Load()
				batched += c.batched.Load()
				t.Logf("pod %d: %d attempts alone, %d batches of %d attempts", pod, c.alone.Load(), c.batches.Load(), c.batched.Load())
			}
			require.Positive(t, batched, "no attempt went in a batch")
			assert.LessOrEqual(t, calls, int64(pods*jobs/10), "calls to the providers for %d attempts", pods*jobs)
		})
	}
}
