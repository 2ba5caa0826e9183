package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// With keep-alive a task runs several times its LockAtMostFor: no other pod gets
// the lock meanwhile, the task's context stays alive and its deadline moves
// ahead with each extension; the lock is free once the task returns.
func TestKeepAliveOutlivesLockAtMostFor(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		r := &recorder{}
		ex, logs := newLoggedExecutor(newProvider(t), shedlock.WithListener(r), shedlock.WithKeepAlive())
		other := newProvider(t)
		// Keep-alive has LockAtMostFor less a tenth, less the first third, for an
		// extension to commit: at 3 s, room for the commit stalls of a machine
		// busy with the whole suite (at 1 s, a 600 ms stall on PostgreSQL, behind
		// the other pod's polls, lost the lock).
		cfg := shedlock.LockConfig{Name: "long", LockAtMostFor: 3 * time.Second}
		const runFor = 3 * 3 * time.Second
		var deadlines []time.Time
		ran, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			start := time.Now()
			for time.Since(start) < runFor {
				if l, err := other.TryLock(context.Background(), cfg); err == nil {
					_ = l.Unlock(context.Background())
					t.Errorf("another pod took the lock %v into the run", time.Since(start))
				}
				d, ok := ctx.Deadline()
				require.True(t, ok)
				deadlines = append(deadlines, d)
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(20 * time.Millisecond): // a poll interval
				}
			}
			return nil
		})
		require.True(t, ran)
		require.NoError(t, err, "executor log:\n%s", logs)
		assertFree(t, other, cfg)

		assert.True(t, deadlines[len(deadlines)-1].After(deadlines[0].Add(2*cfg.LockAtMostFor)),
			"the deadline moved with the extensions: first %v, last %v", deadlines[0], deadlines[len(deadlines)-1])
		evs := stopped(t, ex, r)
		extended := of(evs, shedlock.EventExtended)
		// One extension a third of LockAtMostFor: about nine in three LockAtMostFor.
		assert.GreaterOrEqual(t, len(extended), 6, "extensions")
		for _, ev := range extended {
			assert.True(t, ev.KeepAlive)
			// The deadline counts from before the Extend was sent, less the margin.
			sent := ev.Time.Add(-ev.Duration)
			assert.WithinDuration(t, sent.Add(cfg.LockAtMostFor-cfg.LockAtMostFor/10), ev.Until, time.Millisecond)
		}
		assert.Empty(t, of(evs, shedlock.EventLost))
		assert.Empty(t, of(evs, shedlock.EventExpired))
	})
}

// Keep-alive ends the task's context with ErrLockLost when the lock is taken
// away, by deleting its row or stealing it with an UPDATE, within about half of
// LockAtMostFor.
func TestKeepAliveLostWhenRowTakenAway(t *testing.T) {
	t.Parallel()
	for name, takeAway := range map[string]string{
		"deleted": "DELETE FROM `{t}` WHERE name = 'taken'",
		"stolen": "UPDATE `{t}` SET locked_by = 'thief', lock_until = TIMESTAMPADD(MINUTE, 5, UTC_TIMESTAMP(3)) " +
			"WHERE name = 'taken'",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := testdb.Open(t, nil)
			table := testdb.NewTable(t, db)
			ex, r := listened(newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)), shedlock.WithKeepAlive())
			cfg := shedlock.LockConfig{Name: "taken", LockAtMostFor: time.Second}
			var takenAt, endedAt time.Time
			_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
				takenAt = time.Now()
				_, err := db.ExecContext(ctx, strings.ReplaceAll(takeAway, "{t}", table))
				require.NoError(t, err)
				<-ctx.Done()
				endedAt = time.Now()
				assert.ErrorIs(t, context.Cause(ctx), shedlock.ErrLockLost)
				assert.ErrorIs(t, ctx.Err(), context.Canceled, "refused, not timed out")
				assert.ErrorIs(t, shedlock.AssertLocked(ctx), shedlock.ErrNotLocked)
				return context.Cause(ctx)
			})
			require.ErrorIs(t, err, shedlock.ErrLockLost)
			assert.Less(t, endedAt.Sub(takenAt), cfg.LockAtMostFor/2+100*time.Millisecond,
				"a lost lock ends the task's context within about half of LockAtMostFor")
			evs := stopped(t, ex, r)
			lost := of(evs, shedlock.EventLost)
			require.Len(t, lost, 1)
			assert.True(t, lost[0].KeepAlive)
			assert.ErrorIs(t, lost[0].Err, shedlock.ErrLockLost)
			finished := of(evs, shedlock.EventFinished)
			require.Len(t, finished, 1)
			assert.ErrorIs(t, finished[0].Cause, shedlock.ErrLockLost)
			// The release finds the lock lost, as it is.
			assert.ErrorIs(t, of(evs, shedlock.EventReleaseFailed)[0].Err, shedlock.ErrLockLost)
		})
	}
}

// flakyProvider gives locks whose Extend fails as it says.
type flakyProvider struct {
	inner     shedlock.LockProvider
	mu        sync.Mutex
	extendErr func(n int) error // the n-th Extend's error (n from 1)
	extends   int
}

func (p *flakyProvider) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	l, err := p.inner.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &flakyLock{Lock: l, p: p}, nil
}

type flakyLock struct {
	shedlock.Lock
	p *flakyProvider
}

func (l *flakyLock) Extend(ctx context.Context, most, least time.Duration) error {
	l.p.mu.Lock()
	l.p.extends++
	err := l.p.extendErr(l.p.extends)
	l.p.mu.Unlock()
	if err != nil {
		return err
	}
	return l.Lock.Extend(ctx, most, least)
}

// A failed Extend is retried while the lock has time left: the task goes on.
func TestKeepAliveRetriesTransientErrors(t *testing.T) {
	t.Parallel()
	blip := errors.New("connection reset by peer")
	p := &flakyProvider{inner: shedlocktest.NewMemoryStore().Provider("a"), extendErr: func(n int) error {
		if n == 2 || n == 3 {
			return blip
		}
		return nil
	}}
	ex, r := listened(p, shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "flaky", LockAtMostFor: 300 * time.Millisecond}
	_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		// Until the fifth extension, well past LockAtMostFor.
		for {
			p.mu.Lock()
			n := p.extends
			p.mu.Unlock()
			if n >= 5 {
				return nil
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(10 * time.Millisecond): // a poll interval
			}
		}
	})
	require.NoError(t, err)
	evs := stopped(t, ex, r)
	failed := of(evs, shedlock.EventExtendFailed)
	require.Len(t, failed, 2)
	assert.ErrorIs(t, failed[0].Err, blip)
	assert.GreaterOrEqual(t, len(of(evs, shedlock.EventExtended)), 2)
	assert.Empty(t, of(evs, shedlock.EventLost))
	// The retry came sooner than the next regular extension.
	assert.Less(t, failed[1].Time.Sub(failed[0].Time), cfg.LockAtMostFor/3)
}

// When no Extend succeeds, the task's context ends with ErrLockLost before the
// lock's time is up: the deadline passed, so its Err is DeadlineExceeded, and a
// context derived from it says the same.
func TestKeepAliveGivesUpBeforeTheLockEnds(t *testing.T) {
	t.Parallel()
	down := errors.New("dial tcp: connection refused")
	p := &flakyProvider{inner: shedlocktest.NewMemoryStore().Provider("a"), extendErr: func(int) error { return down }}
	ex, r := listened(p, shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "doomed", LockAtMostFor: 300 * time.Millisecond}
	var deadline time.Time
	_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		deadline, _ = ctx.Deadline()
		child, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		<-child.Done()
		assert.ErrorIs(t, child.Err(), context.DeadlineExceeded, "a derived context")
		assert.ErrorIs(t, context.Cause(child), shedlock.ErrLockLost, "a derived context")
		assert.ErrorIs(t, context.Cause(ctx), down, "the cause says what failed")
		return ctx.Err()
	})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	evs := stopped(t, ex, r)
	// The lock ends LockAtMostFor after the store got the acquiring statement,
	// which is after it was sent: the context must end before.
	acquired := of(evs, shedlock.EventAcquired)
	require.Len(t, acquired, 1)
	sent := acquired[0].Time.Add(-acquired[0].Duration)
	assert.True(t, deadline.Before(sent.Add(cfg.LockAtMostFor)),
		"the context ends at %v, after the lock's end at %v or later", deadline, sent.Add(cfg.LockAtMostFor))
	assert.Equal(t, acquired[0].Until, deadline, "no extension moved the deadline")
	assert.NotEmpty(t, of(evs, shedlock.EventExtendFailed))
	lost := of(evs, shedlock.EventLost)
	require.Len(t, lost, 1)
	assert.ErrorIs(t, lost[0].Err, shedlock.ErrLockLost)
}

// Stop ends a kept-alive task's context with ErrStopped, as without keep-alive.
func TestKeepAliveStopCause(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t), shedlock.WithKeepAlive())
		running := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			// Long enough that a slow store's late extension does not lose it first.
			_, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "stop", LockAtMostFor: 3 * time.Second},
				func(ctx context.Context) error {
					close(running)
					<-ctx.Done()
					return context.Cause(ctx)
				})
			done <- err
		}()
		<-running
		require.NoError(t, ex.Stop(context.Background()))
		assert.ErrorIs(t, <-done, shedlock.ErrStopped)
	})
}

// The job option overrides the executor's: on for one job of an executor
// without keep-alive, off for one job of an executor with it; and it reaches
// FixedDelay, Wrap and RunWith alike.
func TestKeepAliveJobOption(t *testing.T) {
	t.Parallel()
	// A lease long enough for keep-alive's extensions to come in time on a
	// busy machine running the suite's other tests beside this one.
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: 400 * time.Millisecond}
	}
	// outlives reports whether a task that runs three LockAtMostFor was let run.
	outlives := func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(1200 * time.Millisecond):
			return nil
		}
	}
	store := shedlocktest.NewMemoryStore()
	plain := shedlock.NewExecutor(store.Provider("a"))
	kept := shedlock.NewExecutor(store.Provider("b"), shedlock.WithKeepAlive())

	_, err := plain.RunWith(context.Background(), cfg("run-on"), outlives, shedlock.KeepAlive(true))
	assert.NoError(t, err, "RunWith KeepAlive(true)")
	_, err = kept.RunWith(context.Background(), cfg("run-off"), outlives, shedlock.KeepAlive(false))
	assert.ErrorIs(t, err, shedlock.ErrLockExpired, "RunWith KeepAlive(false)")
	_, err = kept.Run(context.Background(), cfg("run-default"), outlives)
	assert.NoError(t, err, "Run on an executor WithKeepAlive")

	results := make(chan error, 2)
	record := func(ctx context.Context) error { err := outlives(ctx); results <- err; return err }
	require.NoError(t, plain.FixedDelay(cfg("loop-on"), time.Hour, record, shedlock.KeepAlive(true)))
	plain.Start()
	assert.NoError(t, <-results, "FixedDelay KeepAlive(true)")
	j, err := kept.Wrap(cfg("cron-off"), shedlock.JobFunc(record), shedlock.KeepAlive(false))
	require.NoError(t, err)
	j.Run()
	assert.ErrorIs(t, <-results, shedlock.ErrLockExpired, "Wrap KeepAlive(false)")

	_, err = plain.RunWith(context.Background(), cfg("nil"), outlives, nil)
	assert.ErrorIs(t, err, shedlock.ErrInvalidOption)
	_, err = plain.Wrap(cfg("nil-wrap"), cron.FuncJob(func() {}), nil)
	assert.ErrorIs(t, err, shedlock.ErrInvalidOption)
	require.NoError(t, plain.Stop(context.Background()))
	require.NoError(t, kept.Stop(context.Background()))
}

// Keep-alive leaves no goroutine behind, nor does the task's context.
func TestKeepAliveLeavesNoGoroutine(t *testing.T) {
	// Not parallel: goleak sees every goroutine of the process.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"), shedlock.WithKeepAlive(),
		shedlock.WithListener(&recorder{}))
	cfg := shedlock.LockConfig{Name: "leak", LockAtMostFor: 30 * time.Millisecond}
	for range 5 {
		_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			child, cancel := context.WithCancel(ctx)
			defer cancel()
			stop := context.AfterFunc(child, func() {})
			defer stop()
			time.Sleep(50 * time.Millisecond) // outlives the lock: extended at least once
			return nil
		})
		require.NoError(t, err)
	}
	require.NoError(t, ex.Stop(context.Background()))
}

// The executor's Extend by hand, through LockFromContext, moves the task's
// deadline, both ways; Unlock by hand is refused.
func TestLockFromContextExtendMovesDeadline(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, r := listened(newProvider(t))
		other := warmProvider(t, newProvider(t)) // its first use would eat the 200 ms below
		cfg := shedlock.LockConfig{Name: "by-hand", LockAtMostFor: 10 * time.Second}
		_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			l, ok := shedlock.LockFromContext(ctx)
			require.True(t, ok)
			first, _ := ctx.Deadline()

			before := time.Now()
			require.NoError(t, l.Extend(ctx, time.Minute, 0))
			later, _ := ctx.Deadline()
			assert.WithinRange(t, later, before.Add(time.Minute-5*time.Second), time.Now().Add(time.Minute-5*time.Second))
			assert.True(t, later.After(first))

			// 2 s: the task's context ends 200 ms (the margin) before the lock
			// does, time enough for the check below on a busy machine.
			require.NoError(t, l.Extend(ctx, 2*time.Second, 0))
			sooner, _ := ctx.Deadline()
			assert.True(t, sooner.Before(first), "a shorter Extend brings the deadline closer")
			<-ctx.Done()
			assert.ErrorIs(t, context.Cause(ctx), shedlock.ErrLockExpired)
			// The lock, extended by 2s, has not ended in the store yet.
			_, err := other.TryLock(context.Background(), cfg)
			assert.ErrorIs(t, err, shedlock.ErrNotAcquired)

			assert.ErrorIs(t, l.Unlock(ctx), errors.ErrUnsupported)
			assert.ErrorIs(t, l.Extend(context.Background(), time.Minute, 0), shedlock.ErrLockLost,
				"an Extend after the task's context ended")
			return nil
		})
		require.NoError(t, err)
		evs := stopped(t, ex, r)
		extended := of(evs, shedlock.EventExtended)
		require.Len(t, extended, 2)
		assert.False(t, extended[0].KeepAlive)
	})
}

// AssertLocked passes inside a task and under shedlocktest.LockedContext, and
// fails outside, after the run, and when the lock ran out.
func TestAssertLocked(t *testing.T) {
	t.Parallel()
	assert.ErrorIs(t, shedlock.AssertLocked(context.Background()), shedlock.ErrNotLocked)
	assert.NoError(t, shedlock.AssertLocked(shedlocktest.LockedContext(context.Background())))
	l, ok := shedlock.LockFromContext(shedlocktest.LockedContext(context.Background()))
	require.True(t, ok)
	assert.NoError(t, l.Extend(context.Background(), time.Second, 0))

	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	var taskCtx context.Context
	_, err := ex.Run(context.Background(), job, func(ctx context.Context) error {
		taskCtx = ctx
		return shedlock.AssertLocked(ctx)
	})
	require.NoError(t, err)
	err = shedlock.AssertLocked(taskCtx)
	assert.ErrorIs(t, err, shedlock.ErrNotLocked, "after the run")
	assert.ErrorContains(t, err, "released")

	_, err = ex.Run(context.Background(), shedlock.LockConfig{Name: "short", LockAtMostFor: 50 * time.Millisecond},
		func(ctx context.Context) error {
			<-ctx.Done()
			err := shedlock.AssertLocked(ctx)
			assert.ErrorIs(t, err, shedlock.ErrNotLocked)
			assert.ErrorIs(t, err, shedlock.ErrLockExpired)
			return nil
		})
	require.NoError(t, err)
}

// Keep-alive works with the SQL providers' own Extend: a job on MySQL outlives
// its lock while a direct read of the row shows lock_until moving ahead.
func TestKeepAliveMovesLockUntil(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	table := testdb.NewTable(t, db)
	ex := shedlock.NewExecutor(newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)), shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "row", LockAtMostFor: 2 * time.Second} // room for a busy machine's commit stalls
	var untils []time.Time
	_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		for range 5 {
			untils = append(untils, lockUntil(t, db, table, cfg.Name))
			time.Sleep(cfg.LockAtMostFor / 2) // a poll interval
		}
		return ctx.Err()
	})
	require.NoError(t, err)
	assert.True(t, untils[4].After(untils[0].Add(cfg.LockAtMostFor)), "lock_until moved: %v", untils)
}

// lockUntil reads a lock's end from its row: a UTC time, as the provider writes it.
func lockUntil(t *testing.T, db *sql.DB, table, name string) time.Time {
	t.Helper()
	var s string
	require.NoError(t, db.QueryRow("SELECT lock_until FROM `"+table+"` WHERE name = ?", name).Scan(&s))
	until, err := time.Parse("2006-01-02 15:04:05.999", s)
	require.NoError(t, err)
	return until
}
