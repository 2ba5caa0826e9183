package shedlock_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
)

// The SQLite provider's steady-state statements on the default table; the
// floor sends them itself. A floor row that a changed statement no longer
// matches fails the benchmark ("0 rows, want 1") rather than measuring nothing.
const (
	benchSQLiteAcquire = "UPDATE \"shedlock\" SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')"
	benchSQLiteRelease = "UPDATE \"shedlock\" SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
)

// newSQLiteCycleBench puts the library, the executor and the floor on one pool
// on a new database file.
func newSQLiteCycleBench(b *testing.B) *cycleBench {
	b.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "bench.db")+"?"+shedlock.SQLiteDSNParams)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	p, err := shedlock.NewSQLiteProvider(db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	if err := p.EnsureTable(ctx); err != nil {
		b.Fatal(err)
	}
	owner := p.LockedBy() + "/floor"
	if _, err := db.ExecContext(ctx, "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) "+
		"VALUES ('floor', '2000-01-01 00:00:00.000', '2000-01-01 00:00:00.000', ?)", owner); err != nil {
		b.Fatal(err)
	}
	acquire, err := db.PrepareContext(ctx, benchSQLiteAcquire)
	if err != nil {
		b.Fatal(err)
	}
	release, err := db.PrepareContext(ctx, benchSQLiteRelease)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = acquire.Close(); _ = release.Close() })
	return newCycleBench(b, p, floorCycle(acquire, release,
		[]any{benchMostFor.Milliseconds(), owner, "floor"},
		[]any{int64(0), "floor", owner}))
}

// BenchmarkSQLiteCycle is BenchmarkMySQLCycle on the SQLite provider.
func BenchmarkSQLiteCycle(b *testing.B) { benchCycles(b, newSQLiteCycleBench(b)) }

// BenchmarkSQLiteCycleVsFloor is BenchmarkMySQLCycleVsFloor on the SQLite provider.
func BenchmarkSQLiteCycleVsFloor(b *testing.B) { benchVsFloor(b, newSQLiteCycleBench(b)) }
