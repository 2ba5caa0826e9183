package integration_test

import (
	"context"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The statements a provider sends, counted, on a table with the control
// columns and without: the same, and a refused attempt of a paused job is
// the one statement of a refused attempt of a held one.

// controlAttempts measures, with count, the statements of: n lock+unlock
// cycles, n attempts on a lock another provider holds, n on a paused one,
// and one batch of 200 names of which one is held and one paused, fresh and
// again. other holds "held" and paused "paused" before.
type controlAttempts struct {
	n                            int
	cycles, held, paused         int64
	freshBatch, batch, heldBatch int64
}

func measureControlAttempts(t *testing.T, p shedlock.LockProvider, control bool, count func(func()) int64) controlAttempts {
	t.Helper()
	ctx := context.Background()
	m := controlAttempts{n: 20}
	attempts := func(name string, want error) int64 {
		return count(func() {
			for range m.n {
				_, err := p.TryLock(ctx, lockFor(name, time.Minute))
				require.ErrorIs(t, err, want)
			}
		})
	}
	// Every name seen once, so that its first sight's checks are not counted.
	for _, name := range []string{"held", "paused"} {
		_, err := p.TryLock(ctx, lockFor(name, time.Minute))
		require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	}
	l, err := p.TryLock(ctx, lockFor("job", time.Minute))
	require.NoError(t, err)
	require.NoError(t, l.Unlock(ctx))
	m.cycles = count(func() {
		for range m.n {
			l, err := p.TryLock(ctx, lockFor("job", time.Minute))
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx))
		}
	})
	m.held = attempts("held", shedlock.ErrNotAcquired)
	refusedPaused := shedlock.ErrNotAcquired // held, on a table without the control columns
	if control {
		refusedPaused = shedlock.ErrPaused
	}
	m.paused = attempts("paused", refusedPaused)
	batch := batchOf(append(names("member", 198), "held", "paused")...)
	var res []shedlock.LockResult
	m.freshBatch = count(func() { res = mustBatch(t, p, batch) })
	for _, r := range res[:198] {
		require.NoError(t, r.Err)
		require.NoError(t, r.Lock.Unlock(ctx))
	}
	m.batch = count(func() { res = mustBatch(t, p, batch) })
	requireHeldNotPaused(t, res[198].Err)
	require.ErrorIs(t, res[199].Err, refusedPaused)
	m.heldBatch = count(func() { mustBatch(t, p, batch) })
	for _, r := range res[:198] {
		require.NoError(t, r.Lock.Unlock(ctx))
	}
	return m
}

// holdAndPause makes other hold "held" and, where it can, pause "paused"
// (on a table without the control columns, it holds "paused" too).
func holdAndPause(t *testing.T, other controlProvider, control bool) {
	t.Helper()
	ctx := context.Background()
	_, err := other.TryLock(ctx, lockFor("held", time.Minute))
	require.NoError(t, err)
	if control {
		require.NoError(t, other.Pause(ctx, "paused", time.Time{}))
	} else {
		_, err = other.TryLock(ctx, lockFor("paused", time.Minute))
		require.NoError(t, err)
	}
}

// MySQL/MariaDB, counted by the server on a one-connection pool: one round
// trip per acquisition, held or paused, and per release; a batch's two
// statements (one on MariaDB), and the names' check once.
func TestControlStatementsMySQL(t *testing.T) {
	t.Parallel()
	for _, control := range []bool{false, true} {
		t.Run(map[bool]string{false: "CatchUpTable", true: "ControlTable"}[control], func(t *testing.T) {
			t.Parallel()
			admin := testdb.Open(t, nil)
			table := testdb.NewCatchUpTable(t, admin)
			if control {
				table = testdb.NewControlTable(t, admin)
			}
			holdAndPause(t, newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)), control)
			db := testdb.Open(t, nil)
			db.SetMaxOpenConns(1)
			db.SetMaxIdleConns(1)
			db.SetConnMaxLifetime(0)
			p := newMySQLProvider(t, db, shedlock.WithTableName(table))
			batchCycle(t, p, names("warm-up", 3)) // first use and the first batch's prepares
			var version string
			require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
			perBatch := int64(2)
			if strings.Contains(strings.ToLower(version), "mariadb") {
				perBatch = 1
			}
			var prepares int64
			count := func(f func()) int64 {
				before := sessionCounters(t, db)
				f()
				after := sessionCounters(t, db)
				prepares += after["Com_stmt_prepare"] - before["Com_stmt_prepare"]
				assert.Equal(t, after["Com_stmt_execute"]-before["Com_stmt_execute"], after["Questions"]-before["Questions"]-1,
					"every round trip a prepared statement's")
				return after["Com_stmt_execute"] - before["Com_stmt_execute"]
			}
			m := measureControlAttempts(t, p, control, count)
			n := int64(m.n)
			assert.Equal(t, controlAttempts{n: m.n, cycles: 2 * n, held: n, paused: n,
				freshBatch: perBatch + 1, batch: perBatch, heldBatch: perBatch}, m)
			assert.Zero(t, prepares, "prepares")
			t.Logf("%s, %s: statements %+v", version, table, m)
		})
	}
}

// PostgreSQL, counted on the wire of a one-connection pool, with each
// client: one round trip per acquisition, held or paused, per release and
// per batch.
func TestControlStatementsPostgres(t *testing.T) {
	t.Parallel()
	for _, c := range pgClients {
		for _, control := range []bool{false, true} {
			t.Run(c.name+map[bool]string{false: "/CatchUpTable", true: "/ControlTable"}[control], func(t *testing.T) {
				t.Parallel()
				admin := testdb.OpenPostgres(t, testdb.PGX, nil)
				table := testdb.NewCatchUpPostgresTable(t, admin)
				if control {
					table = testdb.NewControlPostgresTable(t, admin)
				}
				holdAndPause(t, newPostgresProvider(t, testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table)), control)
				db, px := openThroughProxy(t, c)
				p := newPostgresProvider(t, db, shedlock.WithTableName(table))
				batchCycle(t, p, names("warm-up", 3))
				count := func(f func()) int64 {
					before := px.Stats().Requests
					f()
					return int64(px.Stats().Requests - before)
				}
				m := measureControlAttempts(t, p, control, count)
				n := int64(m.n)
				assert.Equal(t, controlAttempts{n: m.n, cycles: 2 * n, held: n, paused: n, freshBatch: 1, batch: 1, heldBatch: 1}, m)
				t.Logf("%s: round trips %+v", table, m)
			})
		}
	}
}

// SQLite, counted by a driver that wraps modernc.org/sqlite's: one statement
// per acquisition, held or paused, per release and per batch.
func TestControlStatementsSQLite(t *testing.T) {
	t.Parallel()
	for _, control := range []bool{false, true} {
		t.Run(map[bool]string{false: "CatchUpTable", true: "ControlTable"}[control], func(t *testing.T) {
			t.Parallel()
			c := openSQLiteControlTable(t, control)
			holdAndPause(t, c.newProvider(t), control)
			db, sent := openCountingSQLite(t, sqliteFile(t, c.db))
			p := newSQLiteProvider(t, db)
			batchCycle(t, p, names("warm-up", 3))
			count := func(f func()) int64 {
				before := sent.Load()
				f()
				return sent.Load() - before
			}
			m := measureControlAttempts(t, p, control, count)
			n := int64(m.n)
			assert.Equal(t, controlAttempts{n: m.n, cycles: 2 * n, held: n, paused: n, freshBatch: 1, batch: 1, heldBatch: 1}, m)
		})
	}
}

// sqliteFile is the file of db's main database.
func sqliteFile(t *testing.T, db *sql.DB) string {
	t.Helper()
	var seq int
	var name, file string
	require.NoError(t, db.QueryRow("SELECT seq, name, file FROM pragma_database_list WHERE name = 'main'").Scan(&seq, &name, &file))
	return file
}

// On SQLite, a paused job's attempt matches its row and leaves it as it is
// (see controlUpdateSQL): SQLite writes no page for it, so the attempt
// appends nothing to the write-ahead log, as a held one's does not, while a
// lock taken does.
func TestControlSQLitePausedAttemptWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := openSQLiteControlTable(t, true)
	p := c.newProvider(t)
	require.NoError(t, p.Pause(ctx, "job", time.Time{}))
	res, err := p.TryLockBatch(ctx, batchOf("job", "other"))
	require.NoError(t, err)
	requirePaused(t, res[0].Err)
	require.NoError(t, res[1].Lock.Unlock(ctx))
	wal := sqliteFile(t, c.db) + "-wal"
	size := func() int64 {
		st, err := os.Stat(wal)
		require.NoError(t, err)
		return st.Size()
	}
	before := size()
	for range 20 {
		_, err := p.TryLock(ctx, lockFor("job", time.Minute))
		requirePaused(t, err)
		res, err := p.TryLockBatch(ctx, batchOf("job"))
		require.NoError(t, err)
		requirePaused(t, res[0].Err)
	}
	assert.Equal(t, before, size(), "the write-ahead log after 40 paused attempts")
	l, err := p.TryLock(ctx, lockFor("other", time.Minute))
	require.NoError(t, err)
	assert.Greater(t, size(), before, "a lock taken is written")
	require.NoError(t, l.Unlock(ctx))
}
