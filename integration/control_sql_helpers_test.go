package integration_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// controlProvider is what a SQL provider offers an operator and an executor:
// locks one and many at a time, pause and run-now, and the lock list.
type controlProvider interface {
	shedlock.LockProvider
	shedlock.BatchLocker
	shedlock.Controller
	shedlock.RunRequester
	shedlock.Admin
	Close() error
}

// controlTable is one table of a SQL store, for pause and run-now tests.
type controlTable struct {
	// newProvider makes a provider on a pool of its own on the table.
	newProvider func(t *testing.T) controlProvider
	// db is a pool on the table's database, for statements a test sends
	// itself; table is the table's name in SQL, {t} in sql.
	db    *sql.DB
	table string
	// javaInsert and javaUpdate are Java ShedLock's statements, with the
	// session's "now" in its place: a lock of one minute on name (the only
	// argument).
	javaInsert, javaUpdate string
}

// exec runs one of the test's own statements on the table ({t} in stmt).
func (c controlTable) exec(t *testing.T, stmt string, args ...any) int64 {
	t.Helper()
	res, err := c.db.ExecContext(context.Background(), strings.ReplaceAll(stmt, "{t}", c.table), args...)
	require.NoError(t, err, stmt)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	return n
}

// controlDialect makes tables of one SQL store: with every migration
// (control) or without 0004.
type controlDialect struct {
	name string
	open func(t *testing.T, control bool) controlTable
}

var controlDialects = []controlDialect{
	{"MySQL", openMySQLControlTable},
	{"PostgreSQL", openPostgresControlTable},
	{"SQLite", openSQLiteControlTable},
}

// eachControlDialect runs f on a table of each SQL store, in parallel.
func eachControlDialect(t *testing.T, control bool, f func(t *testing.T, c controlTable)) {
	for _, d := range controlDialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			f(t, d.open(t, control))
		})
	}
}

func openMySQLControlTable(t *testing.T, control bool) controlTable {
	db := testdb.Open(t, nil)
	table := testdb.NewCatchUpTable(t, db)
	if control {
		table = testdb.NewControlTable(t, db)
	}
	return controlTable{
		newProvider: func(t *testing.T) controlProvider {
			return newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
		},
		db: db, table: "`" + table + "`",
		javaInsert: "INSERT INTO {t} (name, lock_until, locked_at, locked_by) " +
			"VALUES (?, TIMESTAMPADD(MINUTE, 1, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), 'java-pod')",
		javaUpdate: "UPDATE {t} SET lock_until = TIMESTAMPADD(MINUTE, 1, UTC_TIMESTAMP(3)), " +
			"locked_at = UTC_TIMESTAMP(3), locked_by = 'java-pod' WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)",
	}
}

func openPostgresControlTable(t *testing.T, control bool) controlTable {
	db := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewCatchUpPostgresTable(t, db)
	if control {
		table = testdb.NewControlPostgresTable(t, db)
	}
	const now = "(now() AT TIME ZONE 'UTC')"
	return controlTable{
		newProvider: func(t *testing.T) controlProvider {
			return newPostgresProvider(t, testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table))
		},
		db: db, table: `"` + table + `"`,
		javaInsert: "INSERT INTO {t} (name, lock_until, locked_at, locked_by) " +
			"VALUES ($1, " + now + " + interval '1 minute', " + now + ", 'java-pod')",
		javaUpdate: "UPDATE {t} SET lock_until = " + now + " + interval '1 minute', locked_at = " + now +
			", locked_by = 'java-pod' WHERE name = $1 AND lock_until <= " + now,
	}
}

func openSQLiteControlTable(t *testing.T, control bool) controlTable {
	file := filepath.Join(t.TempDir(), "locks.db")
	db := openSQLite(t, file, shedlock.SQLiteDSNParams)
	if control {
		require.NoError(t, newSQLiteProvider(t, db).EnsureTable(context.Background()))
	} else {
		for _, m := range []string{"0001_create_shedlock", "0002_add_fence", "0003_add_last_success"} {
			ddl, err := sqliteMigrations.fsys.(interface{ ReadFile(string) ([]byte, error) }).ReadFile(m + ".up.sql")
			require.NoError(t, err)
			_, err = db.Exec(string(ddl))
			require.NoError(t, err)
		}
	}
	const now = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
	return controlTable{
		newProvider: func(t *testing.T) controlProvider {
			return newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams))
		},
		db: db, table: "shedlock",
		javaInsert: "INSERT INTO {t} (name, lock_until, locked_at, locked_by) " +
			"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 minute'), " + now + ", 'java-pod')",
		javaUpdate: "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 minute'), locked_at = " + now +
			", locked_by = 'java-pod' WHERE name = ? AND lock_until <= " + now,
	}
}

// lockFor is a config of name held at most for mostFor.
func lockFor(name string, mostFor time.Duration) shedlock.LockConfig {
	return shedlock.LockConfig{Name: name, LockAtMostFor: mostFor}
}

// requirePaused fails unless err is ErrPaused, which is also ErrNotAcquired.
func requirePaused(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, shedlock.ErrPaused, msgAndArgs...)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, msgAndArgs...)
}

// requireHeldNotPaused fails unless err is ErrNotAcquired and not ErrPaused.
func requireHeldNotPaused(t *testing.T, err error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, msgAndArgs...)
	require.NotErrorIs(t, err, shedlock.ErrPaused, msgAndArgs...)
}

// eventually polls cond every few milliseconds until it holds, failing t at
// the deadline.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
