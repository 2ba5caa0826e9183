package bench_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
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
	acquire, err := db.PrepareContext(ctx, floor.SQLite(floor.SQLiteAcquire, "shedlock"))
	if err != nil {
		b.Fatal(err)
	}
	release, err := db.PrepareContext(ctx, floor.SQLite(floor.SQLiteRelease, "shedlock"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = acquire.Close(); _ = release.Close() })
	var fence int64
	var paused bool
	return newCycleBench(b, p, floorCycle(
		queryStep(acquire.QueryRowContext, []any{benchMostFor.Milliseconds(), owner, int64(0), "floor"}, &fence, &paused),
		execStep(release.ExecContext, []any{int64(0), "floor", owner}, false)))
}

// BenchmarkSQLiteCycle is BenchmarkMySQLCycle on the SQLite provider.
func BenchmarkSQLiteCycle(b *testing.B) { benchCycles(b, newSQLiteCycleBench(b)) }

// BenchmarkSQLiteCycleVsFloor is BenchmarkMySQLCycleVsFloor on the SQLite provider.
func BenchmarkSQLiteCycleVsFloor(b *testing.B) { benchVsFloor(b, newSQLiteCycleBench(b)) }
