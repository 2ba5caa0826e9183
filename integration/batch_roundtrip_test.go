package integration_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// names returns n names with prefix.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// batchCycle takes a batch of names and releases what it took.
func batchCycle(t *testing.T, p shedlock.LockProvider, ns []string) {
	t.Helper()
	for _, r := range mustBatch(t, p, batchOf(ns...)) {
		require.NoError(t, r.Err)
		require.NoError(t, r.Lock.Unlock(context.Background()))
	}
}

// A MySQL batch is two statements, each one round trip (prepared on the first
// batch), counted by the server on a one-connection pool: the upsert and the
// read; on MariaDB one, the upsert returning its rows; and one more, the
// names' check, for names the provider has not seen.
func TestBatchMySQLRoundTrips(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	table := testdb.NewFencedTable(t, db)
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	batchCycle(t, p, names("warm-up", 3)) // first use and the first batch's prepares
	var version string
	require.NoError(t, db.QueryRow("SELECT VERSION()").Scan(&version))
	perBatch := int64(2) // the upsert and the read of which rows it took
	if strings.Contains(strings.ToLower(version), "mariadb") {
		perBatch = 1 // the upsert returns the rows
	}

	measure := func(what string, f func(), statements int64) {
		t.Helper()
		before := sessionCounters(t, db)
		f()
		after := sessionCounters(t, db)
		assert.Equal(t, statements+1, after["Questions"]-before["Questions"], "%s: round trips (+1 for the counters' read)", what)
		assert.Equal(t, statements, after["Com_stmt_execute"]-before["Com_stmt_execute"], "%s: statements", what)
		assert.Zero(t, after["Com_stmt_prepare"]-before["Com_stmt_prepare"], "%s: prepares", what)
	}
	var held []shedlock.LockResult
	measure("a batch of 200 new names", func() { held = mustBatch(t, p, batchOf(names("job", 200)...)) }, perBatch+1)
	measure("the same batch, held", func() {
		for _, r := range mustBatch(t, p, batchOf(names("job", 200)...)) {
			require.ErrorIs(t, r.Err, shedlock.ErrNotAcquired)
		}
	}, perBatch)
	for _, r := range held {
		require.NoError(t, r.Lock.Unlock(context.Background()))
	}
	measure("the same batch, free", func() { held = mustBatch(t, p, batchOf(names("job", 200)...)) }, perBatch)
	for _, r := range held {
		require.NoError(t, r.Err)
	}
}

// A PostgreSQL batch is one round trip, whatever its size and whether its
// names are new (the default collation needs no check), with pgx in its
// default mode and under the simple protocol, and with lib/pq, counted on the
// wire of a one-connection pool.
func TestBatchPostgresRoundTrips(t *testing.T) {
	t.Parallel()
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := testdb.NewFencedPostgresTable(t, admin)
			db, px := openThroughProxy(t, c)
			p := newPostgresProvider(t, db, shedlock.WithTableName(table))
			batchCycle(t, p, names("warm-up", 3)) // first use, and lib/pq's prepare of the batch
			requests := func(f func()) int {
				before := px.Stats().Requests
				f()
				return px.Stats().Requests - before
			}
			var held []shedlock.LockResult
			assert.Equal(t, 1, requests(func() { held = mustBatch(t, p, batchOf(names("job", 200)...)) }), "a batch of 200 new names")
			assert.Equal(t, 1, requests(func() {
				for _, r := range mustBatch(t, p, batchOf(names("job", 200)...)) {
					require.ErrorIs(t, r.Err, shedlock.ErrNotAcquired)
				}
			}), "the same batch, held")
			for _, r := range held {
				require.NoError(t, r.Err)
				require.NoError(t, r.Lock.Unlock(context.Background()))
			}
			assert.Equal(t, 1, requests(func() {
				for _, r := range mustBatch(t, p, batchOf(names("job", 7)...)) {
					require.NoError(t, r.Err)
				}
			}), "a batch of another size, free")
		})
	}
}

// A SQLite batch is one statement, counted by a driver that wraps
// modernc.org/sqlite's.
func TestBatchSQLiteStatements(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "locks.db")
	db, sent := openCountingSQLite(t, file)
	p := newSQLiteProvider(t, db)
	require.NoError(t, p.EnsureTable(context.Background()))
	batchCycle(t, p, names("warm-up", 3))
	count := func(f func()) int64 {
		before := sent.Load()
		f()
		return sent.Load() - before
	}
	var held []shedlock.LockResult
	assert.EqualValues(t, 1, count(func() { held = mustBatch(t, p, batchOf(names("job", 200)...)) }), "a batch of 200 new names")
	assert.EqualValues(t, 1, count(func() {
		for _, r := range mustBatch(t, p, batchOf(names("job", 200)...)) {
			require.ErrorIs(t, r.Err, shedlock.ErrNotAcquired)
		}
	}), "the same batch, held")
	for _, r := range held {
		require.NoError(t, r.Err)
	}
}

var registerCounting sync.Once

// countingSent counts the statements each file's pool sent, by DSN.
var countingSent sync.Map // string -> *atomic.Int64

// openCountingSQLite opens file with a driver that counts each statement run.
func openCountingSQLite(t *testing.T, file string) (*sql.DB, *atomic.Int64) {
	t.Helper()
	registerCounting.Do(func() {
		base := openSQLite(t, filepath.Join(t.TempDir(), "base.db"), "")
		sql.Register("sqlite-counting", countingDriver{base.Driver()})
	})
	dsn := "file:" + file + "?" + shedlock.SQLiteDSNParams
	n, _ := countingSent.LoadOrStore(dsn, new(atomic.Int64))
	db, err := sql.Open("sqlite-counting", dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db, n.(*atomic.Int64)
}

type countingDriver struct{ driver.Driver }

func (d countingDriver) Open(dsn string) (driver.Conn, error) {
	c, err := d.Driver.Open(dsn)
	if err != nil {
		return nil, err
	}
	n, _ := countingSent.LoadOrStore(dsn, new(atomic.Int64))
	return countingConn{c, n.(*atomic.Int64)}, nil
}

// countingConn offers only the plain interfaces, so that database/sql runs
// every statement through a Stmt, where it is counted.
type countingConn struct {
	c    driver.Conn
	sent *atomic.Int64
}

func (c countingConn) Prepare(q string) (driver.Stmt, error) {
	s, err := c.c.Prepare(q)
	if err != nil {
		return nil, err
	}
	return countingStmt{s, c.sent}, nil
}
func (c countingConn) Close() error              { return c.c.Close() }
func (c countingConn) Begin() (driver.Tx, error) { return c.c.Begin() } //nolint:staticcheck // the plain interface on purpose

type countingStmt struct {
	s    driver.Stmt
	sent *atomic.Int64
}

func (s countingStmt) Close() error  { return s.s.Close() }
func (s countingStmt) NumInput() int { return s.s.NumInput() }
func (s countingStmt) Exec(args []driver.Value) (driver.Result, error) {
	s.sent.Add(1)
	return s.s.Exec(args) //nolint:staticcheck // the plain interface on purpose
}
func (s countingStmt) Query(args []driver.Value) (driver.Rows, error) {
	s.sent.Add(1)
	return s.s.Query(args) //nolint:staticcheck // the plain interface on purpose
}
