package integration_test

// Issue 16, item 10: a MySQL provider that is never closed keeps its prepared
// statements on the server for as long as the pool's connections live: 500 such
// providers took Prepared_stmt_count from 8 to 2,008, and at the server-wide
// max_prepared_stmt_count (16,382) PREPARE fails for every client of that
// server. A provider that is gone must not leave its statements behind.

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// The server's count is global: on the shared server other tests' statements
// come and go, so this test runs on a private mariadbd of its own.
func TestMySQLProvidersGoneLeaveNoPreparedStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := privateMariaDB(t)
	// The pool's connections live on, as a service's do: only the providers go.
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	table := testdb.NewTable(t, db)
	before := preparedStmtCount(t, db)

	const providers = 500
	func() {
		for i := range providers {
			p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
			require.NoError(t, err)
			l, err := p.TryLock(ctx, shedlock.LockConfig{Name: fmt.Sprintf("job-%d", i), LockAtMostFor: time.Minute})
			require.NoError(t, err)
			require.NoError(t, l.Unlock(ctx))
		}
	}()
	peak := preparedStmtCount(t, db)

	// Nothing refers to the providers or their locks any more. Finalizers and
	// cleanups run some time after a collection: poll, collecting each time.
	// A few providers' statements may still wait for their cleanup, or for a
	// connection that is in use, when the poll ends: not three per provider
	// gone (1,500 when they leak).
	const margin = 30
	deadline := time.Now().Add(10 * time.Second)
	after := peak
	for after-before > margin && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(100 * time.Millisecond) // poll interval
		after = preparedStmtCount(t, db)
	}
	t.Logf("Prepared_stmt_count: %d before, %d after %d providers took a lock each, %d once they were gone",
		before, peak, providers, after)
	assert.LessOrEqual(t, after-before, margin,
		"statements left on the server by %d providers that are gone (%d before, %d now)", providers, before, after)
}

// privateMariaDB starts a mariadbd of the test's own on a free port, stopped
// when t ends, and returns a pool on its database test.
func privateMariaDB(t *testing.T) *sql.DB {
	t.Helper()
	ports, err := privatedb.FreePorts(1)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	srv, err := privatedb.Start(ctx, t.TempDir(), ports[0])
	require.NoError(t, err, "a private mariadbd (Debian's mariadb-server)")
	t.Cleanup(func() { _ = srv.Close() })
	t.Logf("private mariadbd answered in %v", time.Since(start).Round(time.Millisecond))
	db, err := sql.Open("mysql", srv.DSN())
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// preparedStmtCount reads the server's count of prepared statements, as text
// (no statement of its own prepared).
func preparedStmtCount(t *testing.T, db *sql.DB) int {
	t.Helper()
	var name string
	var n int
	require.NoError(t, db.QueryRow("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'").Scan(&name, &n))
	return n
}
