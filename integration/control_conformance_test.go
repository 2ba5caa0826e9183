package integration_test

import (
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// controlStores make providers on tables with every migration's columns, on
// each SQL store (and each PostgreSQL client): the statements that decide a
// pause in the acquisition.
func controlStores() map[string]shedlocktest.NewStoreFunc {
	stores := map[string]shedlocktest.NewStoreFunc{
		"MySQL": func(t *testing.T) shedlocktest.NewProviderFunc {
			table := testdb.NewControlTable(t, testdb.Open(t, nil))
			return func(t *testing.T) shedlock.LockProvider {
				return newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			}
		},
		"SQLite": sqliteStore(),
	}
	for _, c := range pgClients {
		stores["PostgreSQL/"+c.name] = func(t *testing.T) shedlocktest.NewProviderFunc {
			table := testdb.NewControlPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
			return func(t *testing.T) shedlock.LockProvider {
				return newPostgresProvider(t, c.open(t, nil), shedlock.WithTableName(table))
			}
		}
	}
	return stores
}

// The conformance case of pause, resume and run-now, on every SQL store.
func TestControlConformance(t *testing.T) {
	t.Parallel()
	for name, store := range controlStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.RunControl(t, store)
		})
	}
}

// The lock conformance suite on tables with the control columns, whose
// acquiring statements are not those of a table without them (SQLite's
// conformance runs on such a table already, made by EnsureTable).
func TestControlTableLockConformance(t *testing.T) {
	t.Parallel()
	for name, store := range controlStores() {
		if name == "SQLite" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.Run(t, store)
		})
	}
}
