package integration_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// faultyDB opens a pool of its own on dsn whose writes go through f, closed
// when t ends.
func faultyDB(t *testing.T, f *shedlocktest.Faults, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := f.OpenDB(driverName, dsn)
	if err != nil {
		t.Fatalf("open %s through faults: %v", driverName, err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestMySQLUnknownOutcomes(t *testing.T) {
	t.Parallel()
	shedlocktest.RunUnknownOutcomes(t, func(t *testing.T) shedlocktest.NewFaultyProviderFunc {
		table := testdb.NewTable(t, testdb.Open(t, nil))
		return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
			return newMySQLProvider(t, faultyDB(t, f, "mysql", testdb.MySQLDSN(t)), shedlock.WithTableName(table))
		}
	})
}

func TestPostgresUnknownOutcomes(t *testing.T) {
	t.Parallel()
	for _, c := range []pgClient{pgxClient, libpqClient} { // a prepared statement (lib/pq) and a connection's own query (pgx)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.RunUnknownOutcomes(t, func(t *testing.T) shedlocktest.NewFaultyProviderFunc {
				table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
				return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
					db := faultyDB(t, f, c.driver, testdb.PostgresURL(t, c.params))
					return newPostgresProvider(t, db, shedlock.WithTableName(table))
				}
			})
		})
	}
}

func TestSQLiteUnknownOutcomes(t *testing.T) {
	t.Parallel()
	shedlocktest.RunUnknownOutcomes(t, func(t *testing.T) shedlocktest.NewFaultyProviderFunc {
		file := filepath.Join(t.TempDir(), "locks.db")
		if err := newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams)).
			EnsureTable(t.Context()); err != nil {
			t.Fatal(err)
		}
		return func(t *testing.T, f *shedlocktest.Faults) shedlock.LockProvider {
			return newSQLiteProvider(t, faultyDB(t, f, "sqlite", "file:"+file+"?"+shedlock.SQLiteDSNParams))
		}
	})
}
