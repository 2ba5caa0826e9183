package integration_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// holdRows takes names' rows FOR UPDATE in a transaction of its own, as a Java
// pod that takes its lock inside its job's transaction does: every statement
// on those rows waits until the returned function rolls it back.
func holdRows(t *testing.T, db *sql.DB, table string, names []string) (rollback func()) {
	t.Helper()
	holdAll(t, db, table, names)
	for i, n := range names { // free in the store's time, so attempts would take them
		_, err := db.Exec("UPDATE "+table+" SET lock_until = '2000-01-01' WHERE name = ?", n)
		require.NoError(t, err, "row %d", i)
	}
	tx, err := db.Begin()
	require.NoError(t, err)
	for _, n := range names {
		_, err := tx.Exec("SELECT name FROM "+table+" WHERE name = ? FOR UPDATE", n)
		require.NoError(t, err)
	}
	var once sync.Once
	rollback = func() { once.Do(func() { _ = tx.Rollback() }) }
	t.Cleanup(rollback)
	return rollback
}

// waitingOnRows polls until n statements on table run on the server: the
// attempts hung on its held rows.
func waitingOnRows(t *testing.T, db *sql.DB, table string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var running int
		err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND <> 'Sleep' "+
			"AND INFO LIKE CONCAT('%INSERT INTO `', ?, '`%')", table).Scan(&running)
		return err == nil && running >= n
	}, 20*time.Second, 5*time.Millisecond, "attempts waiting on the held rows")
}

// A lock this instance holds is kept and freed while every attempt the
// executor may have in flight hangs on rows another transaction holds: its
// keep-alive extension and its release never wait for them. Before, both
// waited for a slot held by a hung attempt: the extension until the lock ran
// out, the release until its timeout, leaving the row held to LockAtMostFor.
func TestHeldLockKeptAndFreedPastHungAttempts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pool int // MaxOpenConns; 0: unlimited
		opts []shedlock.ExecutorOption
		hung int // attempts the executor lets in flight
	}{
		{"MaxInFlightOne", 0, []shedlock.ExecutorOption{shedlock.WithMaxInFlight(1)}, 1},
		{"PoolOfFour", 4, nil, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := testdb.NewTable(t, admin)
			hungNames := jobNames("hung", tc.hung+3)
			rollback := holdRows(t, admin, table, hungNames)

			db := testdb.Open(t, nil)
			db.SetMaxOpenConns(tc.pool)
			p := newMySQLProvider(t, db, shedlock.WithTableName(table))
			ex, rec := listened(p, append(tc.opts, shedlock.WithReleaseTimeout(3*time.Second),
				shedlock.WithAcquireTimeout(time.Minute))...)
			worker := shedlock.LockConfig{Name: "worker", LockAtMostFor: 3 * time.Second}
			extended, finish := make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := ex.RunWith(context.Background(), worker, func(ctx context.Context) error {
					select {
					case <-finish:
						return nil
					case <-ctx.Done():
						return context.Cause(ctx)
					}
				}, shedlock.KeepAlive(true))
				done <- err
			}()
			require.Eventually(t, func() bool { return len(of(rec.all(), shedlock.EventAcquired)) == 1 },
				10*time.Second, time.Millisecond, "the worker's lock")

			var herd sync.WaitGroup
			for _, n := range hungNames {
				herd.Go(func() {
					_, _ = ex.Run(context.Background(), shedlock.LockConfig{Name: n, LockAtMostFor: time.Minute},
						func(context.Context) error { return nil })
				})
			}
			waitingOnRows(t, admin, table, tc.hung)
			go func() {
				require.Eventually(t, func() bool { return len(of(rec.all(), shedlock.EventExtended)) >= 2 },
					20*time.Second, 5*time.Millisecond)
				close(extended)
			}()
			select {
			case <-extended: // two extensions: the lock outlived its 3 s LockAtMostFor
			case err := <-done:
				t.Fatalf("the worker ended before two extensions: %v", err)
			}
			close(finish)
			require.NoError(t, <-done, "the worker's run, its release included")

			other := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			l, err := other.TryLock(context.Background(), worker)
			require.NoError(t, err, "released while the attempts hang: another instance takes it")
			require.NoError(t, l.Unlock(context.Background()))
			assert.Empty(t, of(rec.all(), shedlock.EventExtendFailed))
			rollback()
			herd.Wait()
		})
	}
}
