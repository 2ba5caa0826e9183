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
// locker that releases when the job returns, the later pods run it again. The
// three run at once on one table of each store, as jobs of their own names.
func TestGocronOffsetPods(t *testing.T) {
	t.Parallel()
	const least = 600 * time.Millisecond
	scenarios := []offsetScenario{
		{name: "adapter scheduler-wide", job: "reportWide", locker: adapter(least)},
		{name: "adapter per job", job: "reportPerJob", locker: adapter(least), perJob: true},
		{name: "without adapter", job: "reportNaive", wantDup: true,
			locker: func(_ *testing.T, p shedlock.LockProvider) gocron.Locker { return naiveLocker{p} }},
	}
	for storeName, newStore := range gocronStores() {
		t.Run(storeName, func(t *testing.T) {
			t.Parallel()
			newProvider := newStore(t)
			// Every pod's provider is past its first use, with its checks, before
			// the clock starts: the ticks are the subject, not a slow first lock.
			providers := make([][]shedlock.LockProvider, len(scenarios))
			for i := range scenarios {
				for range offsetPods {
					providers[i] = append(providers[i], warmProvider(t, newProvider(t)))
				}
			}
			start := time.Now().Add(500 * time.Millisecond).Truncate(100 * time.Millisecond)
			runs := make([]*offsetRuns, len(scenarios))
			for i, sc := range scenarios {
				runs[i] = sc.start(t, providers[i], start)
			}
			for _, r := range runs {
				r.waitAndStop(t)
			}
			for i, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.check(t, runs[i]) })
			}
		})
	}
}

const (
	offsetPods     = 3
	offsetStep     = 100 * time.Millisecond
	offsetInterval = time.Second
	offsetTicks    = 5
)

// offsetScenario is one job on offsetPods schedulers whose schedules are
// offsetStep apart, each with a locker of its own on the table.
type offsetScenario struct {
	name, job string
	locker    func(t *testing.T, p shedlock.LockProvider) gocron.Locker
	perJob    bool // the locker is the job's, not the scheduler's
	wantDup   bool
}

// offsetRuns is what one scenario's schedulers did.
type offsetRuns struct {
	mu       sync.Mutex
	byTick   map[int][]int // tick -> pods that ran it
	scheds   []gocron.Scheduler
	attempts []*countingLocker
}

func (sc offsetScenario) start(t *testing.T, providers []shedlock.LockProvider, start time.Time) *offsetRuns {
	r := &offsetRuns{byTick: map[int][]int{}}
	for pod, p := range providers {
		locker := &countingLocker{Locker: sc.locker(t, p)}
		r.attempts = append(r.attempts, locker)
		var schedOpts []gocron.SchedulerOption
		jobOpts := []gocron.JobOption{
			gocron.WithName(sc.job),
			gocron.WithStartAt(gocron.WithStartDateTime(start.Add(time.Duration(pod) * offsetStep))),
		}
		if sc.perJob {
			jobOpts = append(jobOpts, gocron.WithDistributedJobLocker(locker))
		} else {
			schedOpts = append(schedOpts, gocron.WithDistributedLocker(locker))
		}
		s, err := gocron.NewScheduler(schedOpts...)
		require.NoError(t, err)
		own := start.Add(time.Duration(pod) * offsetStep) // this pod's first fire time
		_, err = s.NewJob(gocron.DurationJob(offsetInterval), gocron.NewTask(func() {
			// The tick is the pod's last fire time before the run, not the
			// nearest: a run that waited on a busy store (SQLite's busy wait on
			// a loaded machine took over half a second) belongs to the tick it
			// was fired for. Its timer may fire a little early: 50 ms of slack.
			tick := int(math.Floor(float64(time.Since(own)+50*time.Millisecond) / float64(offsetInterval)))
			r.mu.Lock()
			r.byTick[tick] = append(r.byTick[tick], pod)
			r.mu.Unlock()
		}), jobOpts...)
		require.NoError(t, err)
		r.scheds = append(r.scheds, s)
		s.Start()
	}
	return r
}

// waitAndStop stops the schedulers once every pod has had its turn at the last
// tick.
func (r *offsetRuns) waitAndStop(t *testing.T) {
	deadline := time.Now().Add(offsetTicks*offsetInterval + 10*time.Second)
	for _, l := range r.attempts {
		for l.calls.Load() < offsetTicks {
			require.True(t, time.Now().Before(deadline), "a pod made %d lock attempts, want %d", l.calls.Load(), offsetTicks)
			time.Sleep(20 * time.Millisecond) // a poll interval, not a synchronisation
		}
	}
	for _, s := range r.scheds {
		require.NoError(t, s.Shutdown())
	}
}

func (sc offsetScenario) check(t *testing.T, r *offsetRuns) {
	r.mu.Lock()
	defer r.mu.Unlock()
	duplicates := 0
	for tick := range offsetTicks {
		duplicates += max(len(r.byTick[tick])-1, 0)
		if !sc.wantDup {
			assert.Len(t, r.byTick[tick], 1, "tick %d ran on pods %v", tick, r.byTick[tick])
		}
	}
	t.Logf("runs by tick: %v; duplicates: %d", fmt.Sprint(r.byTick), duplicates)
	if sc.wantDup {
		assert.Positive(t, duplicates, "without LockAtLeastFor the offset pods run ticks again")
	}
}

// warmProvider takes and releases a lock of its own on p, so that p's first
// use, with its checks, is over before a test's clock starts; it returns p.
func warmProvider(t *testing.T, p shedlock.LockProvider) shedlock.LockProvider {
	t.Helper()
	l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute})
	require.NoError(t, err, "the warm-up lock")
	require.NoError(t, l.Unlock(context.Background()), "the warm-up unlock")
	return p
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
