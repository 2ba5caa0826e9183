package bench_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// pgClient is a driver and its settings, as a service would open its pool.
type pgClient struct {
	name, driver string
	params       map[string]string
	prepare      bool // the floor prepares its statements: the driver allows it
}

var pgClients = []pgClient{
	{name: "pgx", driver: testdb.PGX, prepare: true},
	// As behind a pooler in transaction mode: nothing may be prepared.
	{name: "pgx-simple", driver: testdb.PGX, params: map[string]string{"default_query_exec_mode": "simple_protocol"}},
	{name: "lib-pq", driver: testdb.LibPQ, prepare: true},
}

// newPostgresCycleBench puts the library, the executor and the floor on one
// pool and one table. The floor sends the provider's texts (package floor),
// prepared where the driver allows.
func newPostgresCycleBench(b *testing.B, c pgClient) *cycleBench {
	b.Helper()
	ctx := context.Background()
	db := testdb.OpenPostgres(b, c.driver, c.params)
	table := testdb.NewFencedPostgresTable(b, db)
	p, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(table))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	owner := p.LockedBy() + "/floor"
	acq, rel := floor.Postgres(floor.PostgresAcquire, table), floor.Postgres(floor.PostgresRelease, table)
	acquire := func(ctx context.Context, args ...any) *sql.Row { return db.QueryRowContext(ctx, acq, args...) }
	release := func(ctx context.Context, args ...any) (sql.Result, error) { return db.ExecContext(ctx, rel, args...) }
	if c.prepare {
		a, err := db.PrepareContext(ctx, acq)
		if err != nil {
			b.Fatal(err)
		}
		r, err := db.PrepareContext(ctx, rel)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = a.Close(); _ = r.Close() })
		acquire, release = a.QueryRowContext, r.ExecContext
	}
	// The returned row, as the provider scans it: the table's oid, the owner, the token.
	var oid, fence int64
	var by string
	return newCycleBench(b, p, floorCycle(
		queryStep(acquire, []any{"floor", benchMostFor.Milliseconds(), owner}, &oid, &by, &fence),
		execStep(release, []any{int64(0), "floor", owner}, false)))
}

// BenchmarkPostgresCycle is BenchmarkMySQLCycle on the PostgreSQL provider, with
// pgx, pgx under its simple protocol, and lib/pq.
func BenchmarkPostgresCycle(b *testing.B) {
	for _, c := range pgClients {
		b.Run(c.name, func(b *testing.B) { benchCycles(b, newPostgresCycleBench(b, c)) })
	}
}

// BenchmarkPostgresCycleVsFloor is BenchmarkMySQLCycleVsFloor on the PostgreSQL
// provider, with each driver.
func BenchmarkPostgresCycleVsFloor(b *testing.B) {
	for _, c := range pgClients {
		b.Run(c.name, func(b *testing.B) { benchVsFloor(b, newPostgresCycleBench(b, c)) })
	}
}
