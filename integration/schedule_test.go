package integration_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// scheduleStore makes providers on one fresh table of a store, each on a pool
// of its own, as pods would. every is the interval of the tests' specs: 2s,
// or what the store's HoldGranularity needs.
type scheduleStore struct {
	name  string
	table func(t *testing.T) func(t *testing.T) shedlock.LockProvider
	every time.Duration
}

// interval is the interval of s's specs.
func (s scheduleStore) interval() time.Duration { return cmp.Or(s.every, 2*time.Second) }

var scheduleStores = []scheduleStore{
	{name: "MySQL", table: func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
		table := testdb.NewTable(t, testdb.Open(t, nil))
		return func(t *testing.T) shedlock.LockProvider {
			p, err := shedlock.NewMySQLProvider(testdb.Open(t, nil), shedlock.WithTableName(table))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			return p
		}
	}},
	{name: "PostgreSQL", table: func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
		table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
		return func(t *testing.T) shedlock.LockProvider {
			p, err := shedlock.NewPostgresProvider(testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			return p
		}
	}},
	{name: "SQLite", table: func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
		file := filepath.Join(t.TempDir(), "locks.db")
		require.NoError(t, newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams)).EnsureTable(context.Background()))
		return func(t *testing.T) shedlock.LockProvider {
			return newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams))
		}
	}},
	// etcd keeps a hold in whole seconds, at least 2s: a run's hold ends the
	// skew bound before the next fire time only 3s apart or more.
	{name: "etcd", every: 3 * time.Second, table: func(t *testing.T) func(t *testing.T) shedlock.LockProvider {
		c := etcdcluster.New(t, 1)
		env := fmt.Sprintf("schedule_%d", time.Now().UnixNano())
		return func(t *testing.T) shedlock.LockProvider {
			cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cli.Close() })
			p, err := shedlocketcd.NewProvider(cli, shedlocketcd.WithEnv(env))
			require.NoError(t, err)
			return p
		}
	}},
}

// skewedParser parses as cron.WithSeconds() does, for a pod whose clock is skew
// ahead of the true time (behind, for a negative skew): it fires each time
// skew early.
type skewedParser struct{ skew time.Duration }

func (p skewedParser) Parse(spec string) (cron.Schedule, error) {
	s, err := cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor).Parse(spec)
	if p.skew == 0 {
		// As parsed: Schedule knows an @every spec, whose fire times are each
		// instance's own, by its type.
		return s, err
	}
	return skewedSchedule{s, p.skew}, err
}

type skewedSchedule struct {
	s    cron.Schedule
	skew time.Duration
}

func (s skewedSchedule) Next(t time.Time) time.Time { return s.s.Next(t.Add(s.skew)).Add(-s.skew) }

// runLog records when each pod ran the job.
type runLog struct {
	mu   sync.Mutex
	runs []podRun
}

type podRun struct {
	pod int
	at  time.Time
}

func (l *runLog) task(pod int) func(context.Context) error {
	return func(context.Context) error {
		l.mu.Lock()
		l.runs = append(l.runs, podRun{pod, time.Now()})
		l.mu.Unlock()
		return nil
	}
}

func (l *runLog) snapshot() []podRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := append([]podRun(nil), l.runs...)
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// schedulePod is one instance: a cron of its own, an executor on a provider of
// its own. register adds the job, by Schedule or by WithLock.
type schedulePod struct {
	c  *cron.Cron
	ex *shedlock.Executor
}

func newSchedulePod(t *testing.T, p shedlock.LockProvider, skew time.Duration) *schedulePod {
	quiet := shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler))
	pod := &schedulePod{c: cron.New(cron.WithParser(skewedParser{skew})), ex: shedlock.NewExecutor(warmProvider(t, p), quiet)}
	t.Cleanup(func() {
		_ = pod.ex.Stop(context.Background())
		<-pod.c.Stop().Done()
	})
	return pod
}

// How a pod adds the job: with Schedule, or with WithLock and LockAtLeastFor 0.
type addJob func(t *testing.T, pod *schedulePod, spec string, cfg shedlock.LockConfig, task func(context.Context) error)

func bySchedule(t *testing.T, pod *schedulePod, spec string, cfg shedlock.LockConfig, task func(context.Context) error) {
	_, err := pod.ex.Schedule(pod.c, spec, cfg, task)
	require.NoError(t, err)
}

func byWithLock(t *testing.T, pod *schedulePod, spec string, cfg shedlock.LockConfig, task func(context.Context) error) {
	_, err := pod.c.AddJob(spec, pod.ex.WithLock(cfg.Name, cfg.LockAtMostFor, 0)(shedlock.JobFunc(task)))
	require.NoError(t, err)
}

// everyOffset runs `@every <every>` on two pods whose crons start one second
// apart, for about span, and returns the runs.
func everyOffset(t *testing.T, newProvider func(t *testing.T) shedlock.LockProvider, add addJob, every, span time.Duration) []podRun {
	var log runLog
	cfg := shedlock.LockConfig{Name: "every", LockAtMostFor: 10 * time.Second}
	pods := []*schedulePod{newSchedulePod(t, newProvider(t), 0), newSchedulePod(t, newProvider(t), 0)}
	for i, pod := range pods {
		add(t, pod, "@every "+every.String(), cfg, log.task(i))
	}
	start := startSecondApart(pods[0].c, pods[1].c)
	time.Sleep(span - time.Since(start))
	for _, pod := range pods {
		<-pod.c.Stop().Done()
	}
	return log.snapshot()
}

// startSecondApart starts first 200ms after a whole second and second one
// second later, and returns when first started. robfig/cron's @every fires on
// whole seconds counted from the start, so crons started 1.1s apart at x.95
// would fire on the same seconds: the offset has to be set on the second.
func startSecondApart(first, second *cron.Cron) time.Time {
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(1200 * time.Millisecond)))
	start := time.Now()
	first.Start()
	time.Sleep(time.Until(start.Add(time.Second)))
	second.Start()
	return start
}

// Two pods whose `@every 2s` schedules start one second apart run the job about once
// per 2s between them with Schedule; with WithLock and LockAtLeastFor 0 each
// runs it every 2s, twice the rate.
func TestScheduleEveryOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	t.Parallel()
	for _, s := range scheduleStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			// Five periods: @every 2s from t=0 and t=1 fires at 2..10 and 3..11.
			every := s.interval()
			span := 5*every + 1300*time.Millisecond
			// Schedule and WithLock each on a table of their own, side by side:
			// each waits out span on the clock.
			t.Run("Schedule", func(t *testing.T) {
				t.Parallel()
				newProvider := s.table(t)
				runs := everyOffset(t, newProvider, bySchedule, every, span)
				t.Logf("Schedule: %d runs in %v: %v", len(runs), span, describeRuns(runs))
				// Five periods of 2s: five runs, give or take the one at the edge.
				assert.GreaterOrEqual(t, len(runs), 4)
				assert.LessOrEqual(t, len(runs), 6)
				for i := 1; i < len(runs); i++ {
					assert.Greater(t, runs[i].at.Sub(runs[i-1].at), every*3/4,
						"two runs within one period: %v", describeRuns(runs))
				}
			})
			t.Run("WithLock", func(t *testing.T) {
				t.Parallel()
				other := s.table(t)
				withLock := everyOffset(t, other, byWithLock, every, span)
				t.Logf("WithLock, LockAtLeastFor 0: %d runs in %v: %v", len(withLock), span, describeRuns(withLock))
				assert.GreaterOrEqual(t, len(withLock), 8, "WithLock with LockAtLeastFor 0 runs once per pod per period")
			})
		})
	}
}

// fixedTimes runs "*/<every> * * * * *" (every even second, for 2s) on three pods whose
// clocks are 150ms behind, right, and 150ms ahead, for about span, and returns
// the runs. The pod ahead, which fires first, stops after a third of span, the
// pod on time after two thirds: the pods left must run every fire time.
func fixedTimes(t *testing.T, newProvider func(t *testing.T) shedlock.LockProvider, add addJob, every, span time.Duration) []podRun {
	var log runLog
	cfg := shedlock.LockConfig{Name: "fixed", LockAtMostFor: 10 * time.Second}
	var pods []*schedulePod
	for i, skew := range []time.Duration{-150 * time.Millisecond, 0, 150 * time.Millisecond} {
		pod := newSchedulePod(t, newProvider(t), skew)
		add(t, pod, fmt.Sprintf("*/%d * * * * *", every/time.Second), cfg, log.task(i))
		pods = append(pods, pod)
	}
	for _, pod := range pods {
		pod.c.Start()
	}
	for i := 2; i >= 0; i-- {
		time.Sleep(span / 3)
		<-pods[i].c.Stop().Done()
	}
	return log.snapshot()
}

// fireTimes counts runs per fire time: the multiple of every each run is nearest.
func fireTimes(runs []podRun, every time.Duration) (first, last time.Time, counts map[time.Time]int) {
	counts = map[time.Time]int{}
	for _, r := range runs {
		fire := r.at.Round(every)
		counts[fire]++
		if first.IsZero() || fire.Before(first) {
			first = fire
		}
		if fire.After(last) {
			last = fire
		}
	}
	return first, last, counts
}

// Three pods with clocks 300ms apart fire every even second: with Schedule
// each fire time runs exactly once, none twice and none skipped, also as the
// pods stop one by one; with WithLock and LockAtLeastFor 0 most run on every
// pod.
func TestScheduleFixedTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	t.Parallel()
	for _, s := range scheduleStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			every := s.interval()
			span := 6 * every
			// Schedule and WithLock each on a table of their own, side by side:
			// each waits out span on the clock.
			t.Run("Schedule", func(t *testing.T) {
				t.Parallel()
				runs := fixedTimes(t, s.table(t), bySchedule, every, span)
				first, last, counts := fireTimes(runs, every)
				t.Logf("Schedule: %d runs, %d fire times: %v", len(runs), len(counts), describeRuns(runs))
				require.NotEmpty(t, runs)
				for fire := first; !fire.After(last); fire = fire.Add(every) {
					assert.Equal(t, 1, counts[fire], "runs of the fire time %s", fire.Format("15:04:05"))
				}
				assert.GreaterOrEqual(t, len(counts), 4)
			})
			t.Run("WithLock", func(t *testing.T) {
				t.Parallel()
				withLock := fixedTimes(t, s.table(t), byWithLock, every, span)
				_, _, wlCounts := fireTimes(withLock, every)
				t.Logf("WithLock, LockAtLeastFor 0: %d runs, %d fire times: %v", len(withLock), len(wlCounts), describeRuns(withLock))
				assert.Greater(t, len(withLock), len(wlCounts), "WithLock with LockAtLeastFor 0 runs some fire times twice")
			})
		})
	}
}

// describeRuns lists runs as pod@seconds.millis, for logs.
func describeRuns(runs []podRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = string(rune('A'+r.pod)) + "@" + r.at.Format("05.000")
	}
	return out
}

// Schedule refuses what it cannot keep its promise with, adds nothing to the
// cron then, and leaves the name free for a corrected call.
func TestScheduleRefuses(t *testing.T) {
	t.Parallel()
	noop := func(context.Context) error { return nil }
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	c := cron.New()
	for _, tc := range []struct {
		name string
		c    *cron.Cron
		spec string
		cfg  shedlock.LockConfig
		task func(context.Context) error
		opts []shedlock.JobOption
		want error
	}{
		{"nil cron", nil, "@hourly", cfg, noop, nil, shedlock.ErrInvalidJob},
		{"nil task", c, "@hourly", cfg, nil, nil, shedlock.ErrInvalidJob},
		{"LockAtLeastFor", c, "@hourly", shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Second}, noop, nil, shedlock.ErrInvalidConfig},
		{"LockAtMostFor within the skew", c, "@hourly", shedlock.LockConfig{Name: "job", LockAtMostFor: 500 * time.Millisecond}, noop, nil, shedlock.ErrInvalidConfig},
		{"LockAtMostFor within ClockSkew", c, "@hourly", cfg, noop, []shedlock.JobOption{shedlock.ClockSkew(time.Minute)}, shedlock.ErrInvalidConfig},
		{"negative ClockSkew", c, "@hourly", cfg, noop, []shedlock.JobOption{shedlock.ClockSkew(-time.Second)}, shedlock.ErrInvalidOption},
		{"nil option", c, "@hourly", cfg, noop, []shedlock.JobOption{nil}, shedlock.ErrInvalidOption},
		{"bad spec", c, "every hour", cfg, noop, nil, shedlock.ErrInvalidConfig},
		{"seconds without WithSeconds", c, "*/2 * * * * *", cfg, noop, nil, shedlock.ErrInvalidConfig},
		{"bad name", c, "@hourly", shedlock.LockConfig{LockAtMostFor: time.Minute}, noop, nil, shedlock.ErrInvalidConfig},
	} {
		_, err := ex.Schedule(tc.c, tc.spec, tc.cfg, tc.task, tc.opts...)
		assert.ErrorIs(t, err, tc.want, tc.name)
	}
	assert.Empty(t, c.Entries(), "nothing added on error")
	_, err := ex.Schedule(c, "@hourly", cfg, noop, shedlock.ClockSkew(time.Second))
	require.NoError(t, err, "the name is still free")
	assert.Len(t, c.Entries(), 1)
	_, err = ex.Schedule(c, "@daily", cfg, noop)
	assert.ErrorIs(t, err, shedlock.ErrDuplicateName)

	require.NoError(t, ex.Stop(context.Background()))
	_, err = ex.Schedule(c, "@hourly", shedlock.LockConfig{Name: "late", LockAtMostFor: time.Minute}, noop)
	assert.ErrorIs(t, err, shedlock.ErrStopped)
	assert.Len(t, c.Entries(), 1)
}

// A name Schedule registered is free again once its cron entry is removed, so
// that a service can remove a job and add it back (reconfiguration), by any
// registration; while the entry is in its cron the name stays taken. Names
// taken by WithLock, Wrap and FixedDelay stay taken: their entries are unknown.
func TestScheduleNameFreeAfterRemove(t *testing.T) {
	t.Parallel()
	noop := func(context.Context) error { return nil }
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	schedule := func(ex *shedlock.Executor, c *cron.Cron, name string) error {
		_, err := ex.Schedule(c, "@daily", shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, noop)
		return err
	}
	// Each adds its job to c where it can, so that removing c's entries removes it.
	register := map[string]func(ex *shedlock.Executor, c *cron.Cron, name string) error{
		"Schedule": schedule,
		"WithLock": func(ex *shedlock.Executor, c *cron.Cron, name string) (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			_, err = c.AddJob("@daily", ex.WithLock(name, time.Minute, 0)(cron.FuncJob(func() {})))
			return err
		},
		"Wrap": func(ex *shedlock.Executor, c *cron.Cron, name string) error {
			j, err := ex.Wrap(shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, cron.FuncJob(func() {}))
			if err != nil {
				return err
			}
			_, err = c.AddJob("@daily", j)
			return err
		},
		"FixedDelay": func(ex *shedlock.Executor, c *cron.Cron, name string) error {
			return ex.FixedDelay(shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}, time.Hour, noop)
		},
	}
	for how, again := range register {
		for _, running := range []bool{false, true} {
			ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
			c := cron.New()
			if running { // Entries goes through the cron's goroutine then
				c.Start()
			}
			id, err := ex.Schedule(c, "@hourly", cfg, noop)
			require.NoError(t, err)
			assert.ErrorIs(t, schedule(ex, c, "job"), shedlock.ErrDuplicateName, "%s: the entry is still in c", how)

			c.Remove(id)
			assert.NoError(t, again(ex, c, "JOB"), "%s(%q) after the entry of %q was removed, running %v", how, "JOB", "job", running)
			assert.ErrorIs(t, schedule(ex, c, "job"), shedlock.ErrDuplicateName, "Schedule while %s holds the name", how)

			for _, e := range c.Entries() {
				c.Remove(e.ID)
			}
			err = schedule(ex, c, "job")
			if how == "Schedule" {
				assert.NoError(t, err, "Schedule after the second Schedule's entry was removed too")
			} else {
				assert.ErrorIs(t, err, shedlock.ErrDuplicateName, "%s keeps the name for the executor's life", how)
			}
			<-c.Stop().Done()
			_ = ex.Stop(context.Background()) // ErrNotStarted after FixedDelay: no loop was meant to run
		}
	}

	// Removed and added back many times, as a reconfiguring service does.
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	c := cron.New()
	for range 3 {
		id, err := ex.Schedule(c, "@hourly", cfg, noop)
		require.NoError(t, err)
		c.Remove(id)
	}
	assert.Empty(t, c.Entries())
}

// grantingProvider grants every lock: only the executor keeps two runs of one
// name apart.
type grantingProvider struct{}

func (grantingProvider) TryLock(context.Context, shedlock.LockConfig) (shedlock.Lock, error) {
	return grantedLock{}, nil
}

type grantedLock struct{}

func (grantedLock) Unlock(context.Context) error                               { return nil }
func (grantedLock) Extend(context.Context, time.Duration, time.Duration) error { return nil }

// A job whose entry was removed while it ran is not joined by a run of the job
// added back under its name: the executor refuses a second run of a name in
// this process, whatever registered it, though the store would grant the lock.
func TestScheduleRemovedRunNotJoinedByNewJob(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(grantingProvider{})
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	c := cron.New() // never started: the test calls the entries' jobs as cron would
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	started, release, oldDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	oldID, err := ex.Schedule(c, "@every 1h", cfg, func(context.Context) error {
		close(started)
		<-release
		return nil
	})
	require.NoError(t, err)
	oldJob := c.Entry(oldID).WrappedJob
	go func() {
		defer close(oldDone)
		oldJob.Run()
	}()
	end := sync.OnceFunc(func() { close(release); <-oldDone })
	t.Cleanup(end) // before the executor's Stop, which waits for the run, should the test fail early
	select {
	case <-started:
	case <-time.After(time.Minute):
		t.Fatal("the first job's run never began")
	}
	c.Remove(oldID)

	var newRuns atomic.Int32
	newID, err := ex.Schedule(c, "@every 1h", cfg, func(context.Context) error {
		newRuns.Add(1)
		return nil
	})
	require.NoError(t, err, "the removed entry's name is free")
	c.Entry(newID).WrappedJob.Run()
	assert.Zero(t, newRuns.Load(), "the new job ran while the removed one still ran")

	end()
	c.Entry(newID).WrappedJob.Run()
	assert.Equal(t, int32(1), newRuns.Load(), "the new job runs once the removed one has ended")
}

// Schedule refuses a spec whose fire times come within twice the clock skew
// bound of each other, the smallest gap for specs with uneven ones, saying
// what to do; nothing is added to the cron and the name stays free.
func TestScheduleRefusesShortIntervals(t *testing.T) {
	t.Parallel()
	noop := func(context.Context) error { return nil }
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	for _, tc := range []struct {
		spec string
		skew []shedlock.JobOption
		gap  string // "" for accepted; the interval the error names
	}{
		{"@every 1s", nil, "1s"},
		{"@every 1500ms", nil, "1s"}, // robfig/cron rounds @every down to whole seconds
		{"* * * * * *", nil, "1s"},
		{"0,1 * * * * *", nil, "1s"}, // 1s, then 59s
		{"0,1 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(400 * time.Millisecond)}, ""},
		{"*/4 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(2 * time.Second)}, "4s"},
		{"0,5,30 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(2 * time.Second)}, ""},
		{"0,4,30 * * * * *", []shedlock.JobOption{shedlock.ClockSkew(2 * time.Second)}, "4s"},
		{"@every 1s", []shedlock.JobOption{shedlock.ClockSkew(400 * time.Millisecond)}, ""},
		{"@every 2s", nil, ""},
		{"*/2 * * * * *", nil, ""},
		{"@hourly", nil, ""},
		{"0 0 29 2 *", nil, ""}, // one fire time a leap year
	} {
		ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
		c := cron.New(cron.WithParser(cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
			cron.Dom | cron.Month | cron.Dow | cron.Descriptor)))
		_, err := ex.Schedule(c, tc.spec, cfg, noop, tc.skew...)
		if tc.gap == "" {
			assert.NoError(t, err, tc.spec)
			continue
		}
		bound := shedlock.DefaultClockSkew.String()
		if tc.skew != nil {
			bound = "2s"
		}
		require.ErrorIs(t, err, shedlock.ErrInvalidConfig, tc.spec)
		for _, want := range []string{fmt.Sprintf("%q", tc.spec), " " + tc.gap + " apart", "(" + bound + ")",
			"larger interval", "smaller ClockSkew"} {
			assert.ErrorContains(t, err, want, tc.spec)
		}
		assert.Empty(t, c.Entries(), "%s: nothing added on error", tc.spec)
		_, err = ex.Schedule(c, "@every 2s", cfg, noop)
		assert.NoError(t, err, "%s: the name is still free", tc.spec)
	}
}
