package integration_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// The margin each bound below allows past the documented one: scheduling on a
// shared 2-core machine, a connection opened, a log line written.
const hangMargin = time.Second

// A keep-alive Extend stuck on a dead connection when the task returns is
// abandoned: Run returns within the release timeout (the release meets the
// same dead store) plus a margin, with ErrReleaseFailed, and Stop does not
// find the task still running. lib/pq does not honour the cancelled context
// while it reads a dead connection: before, Run stayed blocked for good.
func TestHangKeepAliveExtendDoesNotBlockRun(t *testing.T) {
	forEachHangDriver(t, func(t *testing.T, r *hangRig) {
		const releaseTimeout = time.Second
		ex, _ := r.executor(shedlock.WithKeepAlive(), shedlock.WithReleaseTimeout(releaseTimeout))
		cfg := shedlock.LockConfig{Name: "hang-keep-alive", LockAtMostFor: 3 * time.Second}
		var returned atomic.Pointer[time.Time]
		res := runAsync(func() (bool, error) {
			return ex.Run(context.Background(), cfg, func(ctx context.Context) error {
				before := r.proxy.Stats().Swallowed
				r.proxy.SetBlackhole(true)
				// Keep-alive extends after a third of LockAtMostFor: return once its
				// Extend has gone into the blackhole.
				assert.True(t, r.swallowedMoreThan(before, 2*time.Second), "no keep-alive Extend was sent")
				now := time.Now()
				returned.Store(&now)
				return nil
			})
		})
		bound := releaseTimeout + hangMargin
		select {
		case got := <-res:
			require.True(t, got.ran, "the task did not run: %v", got.err)
			taskEnd := *returned.Load()
			t.Logf("Run returned %v after the task, with %v", got.at.Sub(taskEnd).Round(time.Millisecond), got.err)
			assert.ErrorIs(t, got.err, shedlock.ErrReleaseFailed)
			assert.LessOrEqual(t, got.at.Sub(taskEnd), bound, "Run returned later than the release timeout plus a margin")
		case <-time.After(3*time.Second + bound): // the task's own wait, then the bound
			t.Errorf("Run still blocked %v after it began: the stuck Extend held it", 3*time.Second+bound)
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), hangMargin)
		defer cancel()
		assert.NoError(t, ex.Stop(stopCtx), "Stop found the task still running")
	})
}

// Without keep-alive, a release on a dead connection ends within
// WithReleaseTimeout: Run returns within it plus a margin, with
// ErrReleaseFailed. Before, lib/pq held the release, and Run, for good.
func TestHangReleaseHonoursReleaseTimeout(t *testing.T) {
	forEachHangDriver(t, func(t *testing.T, r *hangRig) {
		const releaseTimeout = time.Second
		ex, logs := r.executor(shedlock.WithReleaseTimeout(releaseTimeout))
		cfg := shedlock.LockConfig{Name: "hang-release", LockAtMostFor: 30 * time.Second}
		var returned atomic.Pointer[time.Time]
		res := runAsync(func() (bool, error) {
			return ex.Run(context.Background(), cfg, func(context.Context) error {
				r.proxy.SetBlackhole(true)
				now := time.Now()
				returned.Store(&now)
				return nil
			})
		})
		bound := releaseTimeout + hangMargin
		select {
		case got := <-res:
			require.True(t, got.ran, "the task did not run: %v", got.err)
			taskEnd := *returned.Load()
			t.Logf("Run returned %v after the task, with %v", got.at.Sub(taskEnd).Round(time.Millisecond), got.err)
			assert.ErrorIs(t, got.err, shedlock.ErrReleaseFailed)
			assert.LessOrEqual(t, got.at.Sub(taskEnd), bound, "Run returned later than the release timeout plus a margin")
			assert.Contains(t, logs.String(), "release failed")
		case <-time.After(bound + hangMargin):
			t.Errorf("Run still blocked %v after it began: the release ignored WithReleaseTimeout", bound+hangMargin)
		}
		// The lock stays until its lock_until: no other pod takes it.
		_, err := r.other.TryLock(context.Background(), cfg)
		assert.ErrorIs(t, err, shedlock.ErrNotAcquired)
	})
}

// One pooled connection dies silently while the database answers new ones: the
// keep-alive Extend hung on it is abandoned and retried on a fresh connection,
// so a task running well past LockAtMostFor keeps its lock. Before, the Extend
// waited on the dead connection until the lock ran out (ErrLockLost), and with
// lib/pq Run then stayed blocked.
func TestHangKeepAliveRetriesOnFreshConnection(t *testing.T) {
	forEachHangDriver(t, func(t *testing.T, r *hangRig) {
		// One idle connection: the one the acquisition used, which dies.
		r.db.SetMaxIdleConns(1)
		ex, logs := r.executor(shedlock.WithKeepAlive())
		// mostFor leaves the retry time for a fresh connection on a slow machine,
		// where PostgreSQL forks a backend for it.
		const mostFor, runFor = 6 * time.Second, 10 * time.Second
		cfg := shedlock.LockConfig{Name: "hang-dead-conn", LockAtMostFor: mostFor}
		var (
			silenced              int
			first, last           hold
			reads, notOurs, taken int
			cause                 error
		)
		res := runAsync(func() (bool, error) {
			return ex.Run(context.Background(), cfg, func(ctx context.Context) error {
				silenced = r.proxy.BlackholeOpen()
				end := time.Now().Add(runFor)
				for time.Now().Before(end) && ctx.Err() == nil {
					h, ok, err := r.holding(cfg.Name)
					if assert.NoError(t, err) && ok {
						if reads == 0 {
							first = h
						}
						last = h
						reads++
						if !r.heldByPod(h) {
							notOurs++
						}
					}
					if l, err := r.other.TryLock(ctx, cfg); err == nil {
						taken++
						_ = l.Unlock(context.Background())
					} else if !errors.Is(err, shedlock.ErrNotAcquired) && ctx.Err() == nil {
						t.Errorf("other pod's TryLock: %v", err)
					}
					select { // the task's own work, between checks
					case <-ctx.Done():
					case <-time.After(100 * time.Millisecond):
					}
				}
				cause = context.Cause(ctx)
				return nil
			})
		})
		var got runResult
		select {
		case got = <-res:
		case <-time.After(runFor + mostFor + hangMargin):
			t.Fatalf("Run still blocked %v after it began", runFor+mostFor+hangMargin)
		}
		st := r.proxy.Stats()
		t.Logf("silenced %d connection(s); %d chunks swallowed; %d connections accepted; lock_until moved %v over %d reads",
			silenced, st.Swallowed, st.Accepted, time.Duration(last.until-first.until)*time.Millisecond, reads)
		assert.True(t, got.ran)
		assert.NoError(t, got.err)
		assert.Equal(t, 1, silenced, "pooled connections silenced")
		assert.Positive(t, st.Swallowed, "no Extend went to the dead connection")
		assert.NoError(t, cause, "the task's context ended")
		assert.Zero(t, notOurs, "reads of the row that did not show the pod's live lock")
		assert.Zero(t, taken, "times another pod took the lock")
		assert.GreaterOrEqual(t, time.Duration(last.until-first.until)*time.Millisecond, runFor-mostFor,
			"lock_until did not keep moving")
		assert.Contains(t, logs.String(), "keep-alive could not extend the lock; retrying", "the hung Extend was not abandoned and retried")
		assert.NotContains(t, logs.String(), "lock lost")
	})
}

// A run whose store hangs (every connection, old and new, silenced) gives up
// within WithAcquireTimeout plus a margin; the task does not run, and the
// error is logged at error level (and returned, for Run). Cron jobs and
// fixed-delay loops run with a context without a deadline: before, their
// TryLock waited on the dead store for good.
func TestHangAcquireBounded(t *testing.T) {
	forEachHangDriver(t, func(t *testing.T, r *hangRig) {
		const acquireTimeout = time.Second
		bound := acquireTimeout + hangMargin
		ex, logs := r.executor(shedlock.WithAcquireTimeout(acquireTimeout))
		// First use done, on the same pod and pool without the timeout (a busy
		// machine can take over a second to open the first connection): what
		// hangs is the acquisition itself.
		warm, _ := r.executor()
		ran, err := warm.Run(context.Background(), shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Minute},
			func(context.Context) error { return nil })
		require.NoError(t, err)
		require.True(t, ran)
		var runs atomic.Int64
		task := func(context.Context) error { runs.Add(1); return nil }
		cronJob := ex.WithLock("hang-cron", time.Minute, 0)(shedlock.JobFunc(task))
		require.NoError(t, ex.FixedDelay(shedlock.LockConfig{Name: "hang-delay", LockAtMostFor: time.Minute},
			time.Hour, task))
		r.proxy.SetBlackhole(true)

		// Each wait below is bounded by the test: a run still blocked fails it.
		waitFor := func(what string, done <-chan struct{}, start time.Time) {
			t.Helper()
			select {
			case <-done:
				t.Logf("%s gave up after %v", what, time.Since(start).Round(time.Millisecond))
				assert.LessOrEqual(t, time.Since(start), bound, "%s: later than the acquire timeout plus a margin", what)
			case <-time.After(bound + hangMargin):
				t.Errorf("%s still blocked %v after it began: its TryLock has no bound", what, bound+hangMargin)
			}
		}

		start := time.Now()
		cronDone := make(chan struct{})
		go func() { cronJob.Run(); close(cronDone) }()
		waitFor("cron job", cronDone, start)
		assert.True(t, loggedError(logs, "hang-cron"), "cron job: no error logged")

		started := time.Now()
		ex.Start()
		delayDone := make(chan struct{})
		go func() {
			for !loggedError(logs, "hang-delay") && time.Since(started) < bound+hangMargin {
				time.Sleep(10 * time.Millisecond) // polling the log
			}
			close(delayDone)
		}()
		waitFor("fixed-delay run", delayDone, started)
		assert.True(t, loggedError(logs, "hang-delay"), "fixed-delay run: no error logged")

		called := time.Now()
		res := runAsync(func() (bool, error) {
			return ex.Run(context.Background(), shedlock.LockConfig{Name: "hang-run", LockAtMostFor: time.Minute}, task)
		})
		select {
		case got := <-res:
			t.Logf("Run gave up after %v: %v", got.at.Sub(called).Round(time.Millisecond), got.err)
			assert.False(t, got.ran)
			assert.ErrorIs(t, got.err, context.DeadlineExceeded)
			assert.LessOrEqual(t, got.at.Sub(called), bound, "Run: later than the acquire timeout plus a margin")
		case <-time.After(bound + hangMargin):
			t.Errorf("Run with a context without deadline still blocked %v after it began", bound+hangMargin)
		}
		assert.Zero(t, runs.Load(), "a task ran on a store that does not answer")
	})
}

// loggedError reports whether an error-level line says the lock name could not
// be taken.
func loggedError(logs *logBuffer, name string) bool {
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "could not take lock") &&
			strings.Contains(line, "lock="+name+" ") {
			return true
		}
	}
	return false
}
