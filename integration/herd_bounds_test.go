package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// holdAll writes names' rows held until 2037 by another owner, so that every
// attempt on them by the pod under test fails, as most of a herd's attempts do.
func holdAll(t *testing.T, db *sql.DB, table string, names []string) {
	t.Helper()
	for lo := 0; lo < len(names); lo += 500 {
		batch := names[lo:min(lo+500, len(names))]
		args := make([]any, len(batch))
		for i, n := range batch {
			args[i] = n
		}
		_, err := db.Exec("INSERT INTO "+table+" (name, lock_until, locked_at, locked_by) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, '2037-01-01', '2000-01-01', 'holder'), ", len(batch)), ", "), args...)
		require.NoError(t, err)
	}
}

func jobNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return names
}

// runAll runs every name at once on ex, one goroutine each, as a cron
// scheduler fires a tick's jobs, and returns the errors; entered counts the
// goroutines about to call Run, gone those whose Run returned.
func runAll(ctx context.Context, ex *shedlock.Executor, names []string, entered, gone *atomic.Int64) []error {
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Go(func() {
			entered.Add(1)
			_, errs[i] = ex.Run(ctx, shedlock.LockConfig{Name: n, LockAtMostFor: time.Minute},
				func(context.Context) error { return nil })
			gone.Add(1)
		})
	}
	wg.Wait()
	return errs
}

// With database/sql's default pool (no limit), a pod's attempts at one tick
// would open a connection each; the executor keeps them to its bound: the
// pool's size where it has one, else 8, else WithMaxInFlight.
func TestExecutorBoundsConnections(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	names := jobNames("job", 40) // enough to open many connections, few enough for a shared server
	holdAll(t, admin, table, names)
	for _, tc := range []struct {
		name string
		pool int // MaxOpenConns; 0: unlimited
		opts []shedlock.ExecutorOption
		want int
	}{
		{"UnlimitedPoolDefault", 0, nil, 8},
		{"UnlimitedPoolOption", 0, []shedlock.ExecutorOption{shedlock.WithMaxInFlight(3)}, 3},
		{"PoolOfFive", 5, nil, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := testdb.Open(t, nil)
			db.SetMaxOpenConns(tc.pool)
			db.SetMaxIdleConns(1000) // every connection opened stays open, to be counted
			ex := shedlock.NewExecutor(newMySQLProvider(t, db, shedlock.WithTableName(table)), tc.opts...)
			for _, err := range runAll(context.Background(), ex, names, new(atomic.Int64), new(atomic.Int64)) {
				require.NoError(t, err)
			}
			assert.LessOrEqual(t, db.Stats().OpenConnections, tc.want, "connections opened by one pod's tick")
		})
	}
}

// oneByOne hides a provider's batches: the executor sends it one attempt at a time.
type oneByOne struct{ p shedlock.LockProvider }

func (o oneByOne) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	return o.p.TryLock(ctx, cfg)
}

// The winner's release waits in the same pool as its own pod's attempts; it
// must not wait behind them, or it runs out of its timeout and the lock stays
// held until LockAtMostFor: the next tick would miss the job. The test reads
// the order, not the time: how much of the herd had gone when the release was
// done. In random order among the attempts it would come after half of them.
func TestReleaseNotStarvedByOwnAttempts(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	names := jobNames("held", 1500)
	holdAll(t, admin, table, names)
	db := testdb.Open(t, nil)
	db.SetMaxOpenConns(2) // one attempt in flight, one place kept for the release
	db.SetMaxIdleConns(2)
	// One statement per attempt, as a provider that cannot batch sends them:
	// the herd's runs then count its statements.
	ex := shedlock.NewExecutor(oneByOne{newMySQLProvider(t, db, shedlock.WithTableName(table))},
		shedlock.WithReleaseTimeout(10*time.Second), shedlock.WithAcquireTimeout(10*time.Minute))

	started, finish := make(chan struct{}), make(chan struct{})
	type result struct {
		ran      bool
		err      error
		herdGone int64 // herd runs returned when the winner's Run did
	}
	herd := make(chan []error, 1)
	var entered, gone atomic.Int64
	winner := make(chan result, 1)
	go func() {
		ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "winner", LockAtMostFor: time.Minute},
			func(context.Context) error { close(started); <-finish; return nil })
		winner <- result{ran, err, gone.Load()}
	}()
	<-started
	// Once the release is done, what the rest of the herd does is not this
	// test's subject: its attempts, one statement each behind one another, are
	// ended then instead of sent.
	herdCtx, endHerd := context.WithCancel(context.Background())
	defer endHerd()
	go func() { herd <- runAll(herdCtx, ex, names, &entered, &gone) }()
	// The task returns once the whole herd is waiting to send its attempts.
	require.Eventually(t, func() bool { return entered.Load() == int64(len(names)) }, 10*time.Second, time.Millisecond)
	close(finish)
	r := <-winner
	require.NoError(t, r.err)
	assert.True(t, r.ran)
	t.Logf("herd runs returned before the release: %d of %d", r.herdGone, len(names))
	assert.Less(t, r.herdGone, int64(len(names)/20), "the release must not wait behind the pod's attempts")
	endHerd()
	for _, err := range <-herd {
		if !errors.Is(err, context.Canceled) {
			require.NoError(t, err)
		}
	}
	other := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	l, err := other.TryLock(context.Background(), shedlock.LockConfig{Name: "winner", LockAtMostFor: time.Minute})
	require.NoError(t, err, "released: the next tick takes it")
	require.NoError(t, l.Unlock(context.Background()))
}
