package privatedb_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

// A cluster starts, replicates a write to every node, and takes back a node
// that was SIGKILLed.
func TestGaleraStartKillRejoin(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	g, err := privatedb.StartGalera(ctx, t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("3 nodes Synced in %v", time.Since(start).Round(time.Millisecond))
	dbs := make([]*sql.DB, g.Size())
	for i := range dbs {
		db, err := sql.Open("mysql", g.DSN(i))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs[i] = db
	}
	if _, err := dbs[0].ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, v INT)"); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].ExecContext(ctx, "INSERT INTO t VALUES (1, 42)"); err != nil {
		t.Fatal(err)
	}
	if err := g.Kill(2); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if _, err := dbs[0].ExecContext(ctx, "UPDATE t SET v = 43 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("a commit on a survivor took %v after the kill", time.Since(killed).Round(time.Millisecond))
	rejoin := time.Now()
	if err := g.Rejoin(ctx, 2); err != nil {
		t.Fatal(err)
	}
	t.Logf("node2 rejoined and Synced in %v", time.Since(rejoin).Round(time.Millisecond))
	var v int
	// Synced: the rejoined node has applied what it missed.
	if err := dbs[2].QueryRowContext(ctx, "SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != 43 {
		t.Fatalf("node2 reads v = %d after rejoining, want 43", v)
	}
}

// pgbouncer in transaction mode answers, and hands one client's transactions
// to the server connections of its small pool.
func TestPgBouncerTransactionMode(t *testing.T) {
	ctx := context.Background()
	b, err := privatedb.StartPgBouncer(ctx, t.TempDir(), privatedb.PgBouncerConfig{
		Upstream: "postgres://root@127.0.0.1:5432/test?sslmode=disable", Mode: privatedb.PoolTransaction, PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	db, err := sql.Open("pgx", b.URL(map[string]string{"default_query_exec_mode": "simple_protocol"}))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(8)
	conns := make([]*sql.Conn, 6)
	for i := range conns {
		if conns[i], err = db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	backends := map[int]bool{}
	for range 5 {
		for _, c := range conns {
			var pid int
			if err := c.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				t.Fatal(err)
			}
			backends[pid] = true
		}
	}
	if len(backends) > 2 {
		t.Fatalf("6 clients saw %d server backends, want at most the pool's 2", len(backends))
	}
}
