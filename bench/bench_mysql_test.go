package bench_test

import (
	"context"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// newMySQLCycleBench puts the library, the executor and the floor on one pool
// and one table. The floor prepares the texts the provider sends (package floor).
func newMySQLCycleBench(b *testing.B) *cycleBench {
	b.Helper()
	ctx := context.Background()
	db := testdb.Open(b, nil)
	table := testdb.NewFencedTable(b, db)
	p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		b.Fatal(err)
	}
	acq, rel := floor.MySQL(floor.MySQLAcquire, table, version), floor.MySQL(floor.MySQLRelease, table, version)
	owner := p.LockedBy() + "/floor"
	// The floor's row exists and is free, as the library's is after its first cycle.
	if _, err := db.ExecContext(ctx, "INSERT INTO "+table+
		" (name, lock_until, locked_at, locked_by) VALUES ('floor', '2000-01-01', '2000-01-01', ?)", owner); err != nil {
		b.Fatal(err)
	}
	acquire, err := db.PrepareContext(ctx, acq)
	if err != nil {
		b.Fatal(err)
	}
	release, err := db.PrepareContext(ctx, rel)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = acquire.Close(); _ = release.Close() })
	return newCycleBench(b, p, floorCycle(
		execStep(acquire.ExecContext, []any{"floor", benchMostFor.Microseconds(), owner, owner, benchMostFor.Microseconds()}, true),
		execStep(release.ExecContext, []any{int64(0), int64(0), "floor", owner}, false)))
}

// BenchmarkMySQLCycle measures one uncontended TryLock+Unlock cycle on one name in
// steady state (library), the same two statements sent directly (floor), and
// Executor.Run with an empty task (executor), on MySQL/MariaDB.
func BenchmarkMySQLCycle(b *testing.B) { benchCycles(b, newMySQLCycleBench(b)) }

// BenchmarkMySQLCycleVsFloor reports the library's and the executor's cycle as
// ratios to the floor measured in the same loop, on MySQL/MariaDB.
func BenchmarkMySQLCycleVsFloor(b *testing.B) { benchVsFloor(b, newMySQLCycleBench(b)) }
