package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlockredis"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// catchUpStore makes pods' providers on one fresh store with the last_success
// record (or Redis's or etcd's fired key): open returns a provider on a pool
// of its own and the function that closes that pool, as a pod's restart would.
type catchUpStore struct {
	name string
	open func(t *testing.T) func() (shedlock.LockProvider, func())
	// minHold is the shortest a lock is kept after a run that succeeded,
	// whatever hold is asked: etcd's leases are whole seconds, at least the
	// cluster's minimum TTL (2 s at its defaults).
	minHold time.Duration
}

var catchUpStores = []catchUpStore{
	{name: "MySQL", open: func(t *testing.T) func() (shedlock.LockProvider, func()) {
		table := testdb.NewCatchUpTable(t, testdb.Open(t, nil))
		dsn := testdb.MySQLDSN(t)
		return func() (shedlock.LockProvider, func()) {
			db := openPool(t, "mysql", dsn)
			p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
			require.NoError(t, err)
			return p, func() { _ = p.Close(); _ = db.Close() }
		}
	}},
	{name: "PostgreSQL", open: func(t *testing.T) func() (shedlock.LockProvider, func()) {
		table := testdb.NewCatchUpPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
		dsn := testdb.PostgresDSN(t)
		return func() (shedlock.LockProvider, func()) {
			db := openPool(t, "pgx", dsn)
			p, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(table))
			require.NoError(t, err)
			return p, func() { _ = p.Close(); _ = db.Close() }
		}
	}},
	{name: "SQLite", open: func(t *testing.T) func() (shedlock.LockProvider, func()) {
		file := filepath.Join(t.TempDir(), "locks.db")
		require.NoError(t, newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams)).EnsureTable(context.Background()))
		return func() (shedlock.LockProvider, func()) {
			db := openPool(t, "sqlite", "file:"+file+"?"+shedlock.SQLiteDSNParams)
			p, err := shedlock.NewSQLiteProvider(db)
			require.NoError(t, err)
			return p, func() { _ = p.Close(); _ = db.Close() }
		}
	}},
	{name: "Redis", open: func(t *testing.T) func() (shedlock.LockProvider, func()) {
		addr := testdb.RedisAddr(t)
		env := fmt.Sprintf("catchup_%d", time.Now().UnixNano())
		return func() (shedlock.LockProvider, func()) {
			client := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2})
			p, err := shedlockredis.NewProvider(client, shedlockredis.WithEnv(env))
			require.NoError(t, err)
			return p, func() { _ = client.Close() }
		}
	}},
	{name: "etcd", open: openEtcdCatchUp, minHold: 2 * time.Second},
}

// openPool opens a pod's pool, small: PostgreSQL's connections are shared by
// every test on the machine.
func openPool(t *testing.T, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	db.SetMaxOpenConns(2)
	return db
}

// The contract of shedlock.FireLocker (what CatchUp needs of a store) on every
// store: a fire time that succeeded is never taken again, whoever asks.
func TestCatchUpStoreContract(t *testing.T) {
	t.Parallel()
	for _, s := range catchUpStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.RunCatchUp(t, func(t *testing.T) shedlocktest.NewProviderFunc {
				open := s.open(t)
				return func(t *testing.T) shedlock.LockProvider {
					p, closePool := open()
					t.Cleanup(closePool)
					return p
				}
			})
		})
	}
}

// A Java ShedLock table, without last_success: jobs without CatchUp lock as
// before, and a CatchUp job's take is refused with the migration to run.
func TestCatchUpJavaTable(t *testing.T) {
	t.Parallel()
	tables := map[string]func(t *testing.T) shedlock.LockProvider{
		"MySQL": func(t *testing.T) shedlock.LockProvider {
			table := testdb.NewFencedTable(t, testdb.Open(t, nil))
			p, err := shedlock.NewMySQLProvider(testdb.Open(t, nil), shedlock.WithTableName(table))
			require.NoError(t, err)
			return p
		},
		"PostgreSQL": func(t *testing.T) shedlock.LockProvider {
			table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
			p, err := shedlock.NewPostgresProvider(testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table))
			require.NoError(t, err)
			return p
		},
		"SQLite": func(t *testing.T) shedlock.LockProvider {
			db := openSQLite(t, filepath.Join(t.TempDir(), "locks.db"), shedlock.SQLiteDSNParams)
			require.NoError(t, createSQLiteLockTable(db))
			return newSQLiteProvider(t, db)
		},
	}
	for name, newProvider := range tables {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newProvider(t)
			cfg := shedlock.LockConfig{Name: "java", LockAtMostFor: time.Minute}
			l, err := p.TryLock(ctx, cfg)
			require.NoError(t, err, "a job without CatchUp locks on a table without last_success")
			require.NoError(t, l.Unlock(ctx))

			_, err = p.(shedlock.FireLocker).TryLockFire(ctx, cfg, time.Now())
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			assert.Contains(t, err.Error(), "0003_add_last_success")

			// The executor refuses the job at its first check, with the same error.
			var logs logBuffer
			ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			c := cron.New(cron.WithSeconds())
			_, err = ex.Schedule(c, "0 0 * * * *", shedlock.LockConfig{Name: "java-catch-up", LockAtMostFor: time.Minute},
				func(context.Context) error { return nil }, shedlock.CatchUp(2*time.Hour))
			require.NoError(t, err)
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(logs.String(), "0003_add_last_success") {
				require.True(t, time.Now().Before(deadline), "no error naming the migration: %s", logs.String())
				time.Sleep(5 * time.Millisecond) // a poll with a deadline
			}
			require.NoError(t, ex.Stop(ctx))
		})
	}
}

// fireTally is what the pods' runs did, by the fire time each stood for.
type fireTally struct {
	mu        sync.Mutex
	succeeded map[time.Time]int
	running   atomic.Int32
	overlaps  atomic.Int32
	catchUps  atomic.Int32
}

func newFireTally() *fireTally { return &fireTally{succeeded: map[time.Time]int{}} }

// task runs for work, unless its context ends first, and counts a success
// against its fire time (a run without CatchUp is given the moment cron called
// it: on the tick, to the second).
func (f *fireTally) task(work time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		if f.running.Add(1) > 1 {
			f.overlaps.Add(1)
		}
		defer f.running.Add(-1)
		fire, _ := shedlock.FireTimeFromContext(ctx)
		t := time.NewTimer(work)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
		f.mu.Lock()
		f.succeeded[fire.Truncate(time.Second)]++
		f.mu.Unlock()
		return nil
	}
}

func (f *fireTally) listener() shedlock.Listener {
	return shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
		if ev.Kind == shedlock.EventCatchUp {
			f.catchUps.Add(1)
		}
	})
}

// restartPlan is the restarting pods' scenario: spec fires every interval;
// each pod is up for up, then down for down, over span.
type restartPlan struct {
	spec             string
	every            time.Duration // the spec's period
	up, down, span   time.Duration
	window, retry    time.Duration
	work, lockAtMost time.Duration
	pods             int
}

// scaledRestarts is the Done-when scenario scaled down for make test: every
// 2 s, pods restarting every 1.4 s (up 0.8 s, down 0.6 s, all at once), so
// that about 3 fire times in 7 find no pod up.
var scaledRestarts = restartPlan{spec: "*/2 * * * * *", every: 2 * time.Second,
	up: 800 * time.Millisecond, down: 600 * time.Millisecond,
	span: 16 * time.Second, window: 10 * time.Second, retry: 300 * time.Millisecond,
	work: 100 * time.Millisecond, lockAtMost: 5 * time.Second, pods: 2}

// fullRestarts is the scenario at full scale: every 10 s, pods restarting
// every 7 s (up 4 s, down 3 s), for three minutes.
var fullRestarts = restartPlan{spec: "*/10 * * * * *", every: 10 * time.Second,
	up: 4 * time.Second, down: 3 * time.Second,
	span: 3 * time.Minute, window: time.Minute, retry: 2 * time.Second,
	work: 500 * time.Millisecond, lockAtMost: 5 * time.Second, pods: 2}

// runRestarts runs plan's pods on store, with CatchUp or without, and returns
// the tally and the fire times due while it ran (before the last pod start).
func runRestarts(t *testing.T, open func() (shedlock.LockProvider, func()), plan restartPlan, catchUp bool) (*fireTally, []time.Time) {
	tally := newFireTally()
	sched, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse(plan.spec)
	require.NoError(t, err)
	start := time.Now()
	end := start.Add(plan.span)
	var lastStart atomic.Int64
	var wg sync.WaitGroup
	for range plan.pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A pod keeps its pool across restarts: the store's first-use checks
			// (a dozen statements on MySQL) are not the subject, and on a busy
			// machine they alone outlasted a scaled pod's 0.8 s, so that no run
			// ever finished. The executor, the cron and their runs restart.
			p, closePool := open()
			defer closePool()
			for time.Now().Before(end) {
				lastStart.Store(time.Now().UnixNano())
				stop := startCatchUpPod(t, p, plan, tally, catchUp)
				wait(plan.up)
				stop()
				wait(plan.down)
			}
		}()
	}
	wg.Wait()
	var due []time.Time
	for f := sched.Next(start); !f.After(time.Unix(0, lastStart.Load())); f = sched.Next(f) {
		due = append(due, f)
	}
	if catchUp && len(due) > 0 {
		podIsBack(t, open, plan, tally, due[len(due)-1])
	}
	return tally, due
}

// podIsBack is the end of a redeploy: one pod comes back and stays up until
// the newest fire time due has run to success (at most the window). The
// fire times missed while the last pods were going up and down are the ones it
// catches up; on a busy machine the restarting pods' 0.8 s turns alone did not
// always leave one to finish.
func podIsBack(t *testing.T, open func() (shedlock.LockProvider, func()), plan restartPlan, tally *fireTally, newest time.Time) {
	p, closePool := open()
	defer closePool()
	stop := startCatchUpPod(t, p, plan, tally, true)
	defer stop()
	deadline := time.Now().Add(plan.window)
	for time.Now().Before(deadline) && !tally.hasSucceeded(newest) {
		time.Sleep(20 * time.Millisecond) // a poll with a deadline
	}
}

// hasSucceeded reports whether fire time fire has run to success.
func (f *fireTally) hasSucceeded(fire time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.succeeded[fire] > 0
}

// wait is a pod's time up or down: the scenario's schedule, not a
// synchronisation.
func wait(d time.Duration) { <-time.After(d) }

// startCatchUpPod starts one pod on p: an executor, a cron with the job. stop
// stops it as a redeploy does.
func startCatchUpPod(t *testing.T, p shedlock.LockProvider, plan restartPlan, tally *fireTally,
	catchUp bool) (stop func()) {
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)),
		shedlock.WithListener(tally.listener()))
	c := cron.New(cron.WithSeconds())
	var opts []shedlock.JobOption
	if catchUp {
		opts = append(opts, shedlock.CatchUp(plan.window), shedlock.CatchUpRetry(plan.retry))
	}
	_, err := ex.Schedule(c, plan.spec, shedlock.LockConfig{Name: "nightly", LockAtMostFor: plan.lockAtMost},
		tally.task(plan.work), opts...)
	if err != nil {
		t.Errorf("Schedule: %v", err)
		return func() {}
	}
	c.Start()
	return func() {
		ctx := c.Stop()
		_ = ex.Stop(context.Background())
		<-ctx.Done()
	}
}

// judge checks the tally against the fire times due: none succeeded twice,
// none ran beside another; returns the fire times that did not run, and those
// neither run nor covered by a newer one's run within the window.
func judge(t *testing.T, tally *fireTally, due []time.Time, window time.Duration) (notRun, lost []time.Time) {
	tally.mu.Lock()
	defer tally.mu.Unlock()
	var succeeded []time.Time
	for f, n := range tally.succeeded {
		assert.LessOrEqual(t, n, 1, "fire time %v succeeded %d times", f, n)
		succeeded = append(succeeded, f)
	}
	sort.Slice(succeeded, func(i, j int) bool { return succeeded[i].Before(succeeded[j]) })
	assert.Zero(t, tally.overlaps.Load(), "runs overlapped")
	for _, f := range due {
		if tally.succeeded[f] > 0 {
			continue
		}
		notRun = append(notRun, f)
		i := sort.Search(len(succeeded), func(i int) bool { return succeeded[i].After(f) })
		if i == len(succeeded) || succeeded[i].Sub(f) > window {
			lost = append(lost, f)
		}
	}
	return notRun, lost
}

// With a spec every 2 s and pods that restart every 1.4 s, down together: with
// CatchUp every fire time runs to success once or is covered by a newer one's
// run, none twice; without it, fire times are lost. SHEDLOCK_CATCHUP_FULL=1
// runs it at full scale instead (every 10 s, pods restarting every 7 s, three
// minutes), for make check.
func TestCatchUpRestartingPods(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	plan := scaledRestarts
	if full, _ := strconv.ParseBool(os.Getenv("SHEDLOCK_CATCHUP_FULL")); full {
		plan = fullRestarts
	}
	restartingPods(t, plan)
}

// restartingPods runs plan on every store, with CatchUp and without, all at
// once: the scenario is mostly waiting, and subtests would run two at a time
// on a machine of two cores. The results are judged per store after.
func restartingPods(t *testing.T, plan restartPlan) {
	t.Parallel()
	type result struct {
		tally *fireTally
		due   []time.Time
	}
	// A store that holds a lock past the next fire time after each success
	// (etcd, at the scaled plan's 2 s) leaves that fire time to a retry, which
	// the last pod's short up time may not reach: it runs at full scale only.
	stores := slices.DeleteFunc(slices.Clone(catchUpStores), func(s catchUpStore) bool { return s.minHold >= plan.every })
	results := make([][2]result, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		for k, catchUp := range []bool{true, false} {
			open := s.open(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				tally, due := runRestarts(t, open, plan, catchUp)
				results[i][k] = result{tally, due}
			}()
		}
	}
	wg.Wait()
	for i, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			with, without := results[i][0], results[i][1]
			notRun, lost := judge(t, with.tally, with.due, plan.window)
			t.Logf("with CatchUp: %d fire times due, %d run to success, %d covered by a newer one's run, %d lost, %d catch-up runs",
				len(with.due), len(with.due)-len(notRun), len(notRun)-len(lost), len(lost), with.tally.catchUps.Load())
			assert.Empty(t, lost, "fire times neither run nor covered within the window")
			assert.Positive(t, with.tally.catchUps.Load(), "no catch-up run: the scenario missed no fire time")

			notRun, _ = judge(t, without.tally, without.due, 0)
			t.Logf("without CatchUp: %d fire times due, %d run, %d lost", len(without.due), len(without.due)-len(notRun), len(notRun))
			assert.NotEmpty(t, notRun, "no fire time lost without CatchUp: the scenario shows nothing")
		})
	}
}

// A run that returns an error, or panics, gives its lock up at once, and one
// of the pods runs its fire time again within the retry delay; it then
// succeeds once.
func TestCatchUpFailedRunRetried(t *testing.T) {
	t.Parallel()
	const retry = 400 * time.Millisecond
	for _, s := range catchUpStores {
		for _, how := range []string{"error", "panic"} {
			t.Run(s.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				open := s.open(t)
				type run struct {
					start, end time.Time
					ok         bool
				}
				var mu sync.Mutex
				var runs []run
				succeeded := make(chan struct{})
				task := func(ctx context.Context) error {
					mu.Lock()
					first := len(runs) == 0
					runs = append(runs, run{start: time.Now()})
					i := len(runs) - 1
					mu.Unlock()
					defer func() {
						mu.Lock()
						runs[i].end, runs[i].ok = time.Now(), !first
						mu.Unlock()
						if !first {
							close(succeeded)
						}
					}()
					if first && how == "panic" {
						panic("the first run dies")
					}
					if first {
						return fmt.Errorf("the first run fails")
					}
					return nil
				}
				// An hourly spec: the fire time due is the last hour's, run by the checks alone.
				for range 2 {
					p, closePool := open()
					t.Cleanup(closePool)
					ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)))
					c := cron.New(cron.WithSeconds())
					_, err := ex.Schedule(c, "0 0 * * * *", shedlock.LockConfig{Name: "retried", LockAtMostFor: 10 * time.Second},
						task, shedlock.CatchUp(2*time.Hour), shedlock.CatchUpRetry(retry))
					require.NoError(t, err)
					t.Cleanup(func() { _ = ex.Stop(context.Background()) })
				}
				select {
				case <-succeeded:
				case <-time.After(10 * time.Second):
					t.Fatal("the failed run was not run again")
				}
				mu.Lock()
				defer mu.Unlock()
				require.GreaterOrEqual(t, len(runs), 2)
				gap := runs[1].start.Sub(runs[0].end)
				t.Logf("run again %v after the failed one", gap)
				assert.Less(t, gap, retry+time.Second, "not run again within the retry delay")
				assert.True(t, runs[1].ok)
				assert.Len(t, runs, 2, "the fire time ran again after it succeeded")
			})
		}
	}
}

// A service down for ten fire times runs the job once when it returns, for
// the newest of them, not ten times.
func TestCatchUpDownForTenFireTimes(t *testing.T) {
	t.Parallel()
	for _, s := range catchUpStores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			open := s.open(t)
			p, closePool := open()
			t.Cleanup(closePool)
			cfg := shedlock.LockConfig{Name: "down-ten", LockAtMostFor: 10 * time.Second}
			latest := time.Now().Truncate(time.Minute)
			// The last run that succeeded was eleven fire times ago; ten were missed since.
			l, err := p.(shedlock.FireLocker).TryLockFire(ctx, cfg, latest.Add(-10*time.Minute))
			require.NoError(t, err)
			require.NoError(t, l.UnlockSucceeded(ctx, 0))

			var mu sync.Mutex
			var fires []time.Time
			ran := make(chan struct{}, 16)
			events := make(chan shedlock.Event, 16)
			ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)),
				shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
					if ev.Kind == shedlock.EventCatchUp {
						events <- ev
					}
				})))
			c := cron.New(cron.WithSeconds())
			_, err = ex.Schedule(c, "0 * * * * *", cfg, func(ctx context.Context) error {
				f, _ := shedlock.FireTimeFromContext(ctx)
				mu.Lock()
				fires = append(fires, f)
				mu.Unlock()
				ran <- struct{}{}
				return nil
			}, shedlock.CatchUp(time.Hour), shedlock.CatchUpRetry(100*time.Millisecond))
			require.NoError(t, err)
			c.Start()
			select {
			case <-ran:
			case <-time.After(10 * time.Second):
				t.Fatal("the job did not run when the service returned")
			}
			ev := <-events
			// Several retry delays: a flood would show within them.
			wait(time.Second)
			<-c.Stop().Done()
			require.NoError(t, ex.Stop(ctx))
			mu.Lock()
			defer mu.Unlock()
			assert.True(t, fires[0].Equal(latest) || fires[0].Equal(latest.Add(time.Minute)), "ran fire time %v, want the newest, %v", fires[0], latest)
			assert.True(t, ev.FireTime.Equal(fires[0]), "EventCatchUp's fire time %v, the run's %v", ev.FireTime, fires[0])
			for i := 1; i < len(fires); i++ {
				assert.True(t, fires[i].After(fires[i-1]), "fire times ran out of order or twice: %v", fires)
			}
			assert.LessOrEqual(t, len(fires), 2, "ran %d times: %v", len(fires), fires) // a new minute may begin within the test
		})
	}
}
