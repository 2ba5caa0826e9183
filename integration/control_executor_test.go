package integration_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// Executors on three providers, each checking for run-now requests: a
// paused job's requests wait for Resume, with every attempt skipped as
// paused; then 100 RunNow are exactly 100 runs, never two at once.
func TestControlExecutorsRunEachRequestOnce(t *testing.T) {
	t.Parallel()
	eachControlDialect(t, true, func(t *testing.T, c controlTable) {
		ctx := context.Background()
		admin := c.newProvider(t)
		var runs, pausedSkips atomic.Int64
		var mu sync.Mutex
		running := 0
		skips := shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			if ev.Kind == shedlock.EventSkipped && ev.Skip == shedlock.SkipPaused {
				pausedSkips.Add(1)
			}
		})
		var executors []*shedlock.Executor
		for range 3 {
			ex := shedlock.NewExecutor(c.newProvider(t), shedlock.WithRunNowCheck(20*time.Millisecond),
				shedlock.WithListener(skips))
			_, err := ex.Schedule(cron.New(), "0 0 1 1 *", lockFor("report", time.Minute), func(context.Context) error {
				mu.Lock()
				running++
				if running > 1 {
					t.Error("two runs at once")
				}
				mu.Unlock()
				runs.Add(1)
				mu.Lock()
				running--
				mu.Unlock()
				return nil
			})
			require.NoError(t, err)
			ex.Start()
			t.Cleanup(func() { _ = ex.Stop(context.Background()) })
			executors = append(executors, ex)
		}
		pending := func() int64 {
			got, err := admin.RunRequests(ctx, []string{"report"})
			require.NoError(t, err)
			return got["report"]
		}

		require.NoError(t, admin.Pause(ctx, "report", time.Time{}))
		for range 100 {
			_, err := admin.RunNow(ctx, "report")
			require.NoError(t, err)
		}
		// The executors check every 20 ms: the requests' attempts are refused
		// as paused, on every executor, and run nothing.
		eventually(t, 10*time.Second, "30 attempts skipped as paused", func() bool { return pausedSkips.Load() >= 30 })
		assert.Zero(t, runs.Load(), "runs while paused")
		assert.EqualValues(t, 100, pending())

		require.NoError(t, admin.Resume(ctx, "report"))
		eventually(t, 60*time.Second, "every request run", func() bool { return pending() == 0 })
		// A check that saw the last request before it was run may still be
		// under way: Stop waits for it, and it must run nothing.
		for _, ex := range executors {
			require.NoError(t, ex.Stop(ctx))
		}
		assert.EqualValues(t, 100, runs.Load(), "runs for 100 requests")
	})
}
