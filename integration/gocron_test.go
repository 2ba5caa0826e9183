package integration_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// gocronStores are the stores the gocron tests run on, each pod a provider with
// a pool of its own.
func gocronStores() map[string]shedlocktest.NewStoreFunc {
	return map[string]shedlocktest.NewStoreFunc{
		"mysql":    mysqlStore(nil),
		"postgres": postgresStore(pgxClient, "", nil),
		"sqlite":   sqliteStore(),
	}
}

// naiveLocker is what gocron's own lockers do: hold the lock only while the job
// runs, with no minimum hold.
type naiveLocker struct{ p shedlock.LockProvider }

func (n naiveLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	return n.p.TryLock(ctx, shedlock.LockConfig{Name: key, LockAtMostFor: time.Minute})
}

// The pods of gocron issue 841: each runs the job every second, their schedules
// offset by 0, 100 and 200 ms (pods started at different moments). With the
// adapter (LockAtLeastFor 600 ms: above the offsets, below the interval) each
// tick runs once, whether the locker is the scheduler's or the job's; with a
// locker that releases when the job returns, the later pods run it again.
func TestGocronOffsetPods(t *testing.T) {
	t.Parallel()
	const (
		pods     = 3
		offset   = 100 * time.Millisecond
		interval = time.Second
		ticks    = 5
		least    = 600 * time.Millisecond
	)
	lockers := map[string]struct {
		locker  func(t *testing.T, p shedlock.LockProvider) gocron.Locker
		perJob  bool
		wantDup bool
	}{
		"adapter scheduler-wide": {locker: adapter(least), perJob: false},
		"adapter per job":        {locker: adapter(least), perJob: true},
		"without adapter":        {locker: func(_ *testing.T, p shedlock.LockProvider) gocron.Locker { return naiveLocker{p} }, wantDup: true},
	}
	for storeName, newStore := range gocronStores() {
		for lockerName, lc := range lockers {
			t.Run(storeName+"/"+lockerName, func(t *testing.T) {
				t.Parallel()
				newProvider := newStore(t)
				start := time.Now().Add(500 * time.Millisecond).Truncate(100 * time.Millisecond)
				var mu sync.Mutex
				runs := map[int][]int{} // tick -> pods that ran it
				var scheds []gocron.Scheduler
				var attempts []*countingLocker
				for pod := range pods {
					locker := &countingLocker{Locker: lc.locker(t, newProvider(t))}
					attempts = append(attempts, locker)
					var schedOpts []gocron.SchedulerOption
					jobOpts := []gocron.JobOption{
						gocron.WithName("reportJob"),
						gocron.WithStartAt(gocron.WithStartDateTime(start.Add(time.Duration(pod) * offset))),
					}
					if lc.perJob {
						jobOpts = append(jobOpts, gocron.WithDistributedJobLocker(locker))
					} else {
						schedOpts = append(schedOpts, gocron.WithDistributedLocker(locker))
					}
					s, err := gocron.NewScheduler(schedOpts...)
					require.NoError(t, err)
					_, err = s.NewJob(gocron.DurationJob(interval), gocron.NewTask(func() {
						tick := int(math.Round(float64(time.Since(start)) / float64(interval)))
						mu.Lock()
						runs[tick] = append(runs[tick], pod)
						mu.Unlock()
					}), jobOpts...)
					require.NoError(t, err)
					scheds = append(scheds, s)
				}
				for _, s := range scheds {
					s.Start()
				}
				// Every pod has had its turn at the last tick before the schedulers stop.
				deadline := start.Add(ticks*interval + 10*time.Second)
				for _, l := range attempts {
					for l.calls.Load() < ticks {
						require.True(t, time.Now().Before(deadline), "a pod made %d lock attempts, want %d", l.calls.Load(), ticks)
						time.Sleep(20 * time.Millisecond) // a poll interval, not a synchronisation
					}
				}
				for _, s := range scheds {
					require.NoError(t, s.Shutdown())
				}

				mu.Lock()
				defer mu.Unlock()
				duplicates := 0
				for tick := range ticks {
					duplicates += max(len(runs[tick])-1, 0)
					if !lc.wantDup {
						assert.Len(t, runs[tick], 1, "tick %d ran on pods %v", tick, runs[tick])
					}
				}
				t.Logf("runs by tick: %v; duplicates: %d", fmt.Sprint(runs), duplicates)
				if lc.wantDup {
					assert.Positive(t, duplicates, "without LockAtLeastFor the offset pods run ticks again")
				}
			})
		}
	}
}

// countingLocker counts the lock attempts a scheduler makes.
type countingLocker struct {
	gocron.Locker
	calls atomic.Int32
}

func (c *countingLocker) Lock(ctx context.Context, key string) (gocron.Lock, error) {
	c.calls.Add(1)
	return c.Locker.Lock(ctx, key)
}

func adapter(least time.Duration) func(t *testing.T, p shedlock.LockProvider) gocron.Locker {
	return func(t *testing.T, p shedlock.LockProvider) gocron.Locker {
		l, err := shedlockgocron.NewLocker(p, time.Minute, least)
		require.NoError(t, err)
		return l
	}
}
