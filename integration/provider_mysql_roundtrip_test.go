package integration_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

var roundTripCounters = []string{"Questions", "Com_stmt_execute", "Com_update", "Com_insert",
	"Com_select", "Com_stmt_prepare", "Com_set_option", "Com_begin", "Com_commit"}

// sessionCounters reads the session's status counters over the pool's single
// connection. The read itself is one Question.
func sessionCounters(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	rows, err := db.Query("SHOW SESSION STATUS WHERE Variable_name IN " +
		"('Questions','Com_stmt_execute','Com_update','Com_insert','Com_select','Com_stmt_prepare','Com_set_option','Com_begin','Com_commit')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int64{}
	for rows.Next() {
		var k string
		var v int64
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Steady state is one round trip per acquire and one per release: no SELECT, SET,
// PREPARE or BEGIN/COMMIT besides, counted by the server on a one-connection pool.
// So it is on a table with the fence column: the upsert returns the token.
func TestMySQLRoundTripsSteadyState(t *testing.T) {
	t.Parallel()
	for name, newTable := range map[string]func(testing.TB, *sql.DB) string{
		"JavaTable": testdb.NewTable, "FencedTable": testdb.NewFencedTable,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mysqlRoundTripsSteadyState(t, newTable)
		})
	}
}

func mysqlRoundTripsSteadyState(t *testing.T, newTable func(testing.TB, *sql.DB) string) {
	db := testdb.Open(t, nil)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	table := newTable(t, db)
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	ctx := context.Background()

	cycle := func() {
		l, err := p.TryLock(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle() // first sight of the name: probe, prepares, the upsert inserts

	const n = 20
	before := sessionCounters(t, db)
	for range n {
		cycle()
	}
	after := sessionCounters(t, db)
	want := map[string]int64{
		"Questions":        2*n + 1, // + the SHOW that read the counters
		"Com_stmt_execute": 2 * n,
		"Com_update":       n, // the releases
		"Com_insert":       n, // the acquisitions: one upsert each
		"Com_select":       0,
		"Com_stmt_prepare": 0,
		"Com_set_option":   0,
		"Com_begin":        0,
		"Com_commit":       0,
	}
	for _, k := range roundTripCounters {
		if got := after[k] - before[k]; got != want[k] {
			t.Errorf("%s: %d over %d lock+unlock cycles, want %d", k, got, n, want[k])
		}
	}
}
