package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
)

// openMySQL opens the admin pool, creates a table of the run's own and returns
// the MySQL target; the table is dropped on close.
func openMySQL(ctx context.Context, dsn string, mostFor time.Duration) (*target, string, error) {
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, "", fmt.Errorf("open %s: %w", dsn, err)
	}
	t := &target{}
	t.onClose(admin.Close)
	var version string
	if err := admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		_ = t.close()
		return nil, "", fmt.Errorf("connect: %w", err)
	}
	t.label = "MySQL " + version
	if strings.Contains(strings.ToLower(version), "mariadb") {
		t.label = "MariaDB " + version
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	table := "shedlock_bench_" + hex.EncodeToString(b[:])
	p, err := shedlock.NewMySQLProvider(admin, shedlock.WithTableName(table))
	if err != nil {
		_ = t.close()
		return nil, "", err
	}
	if err := p.EnsureTable(ctx); err != nil {
		_ = t.close()
		return nil, "", err
	}
	t.onClose(func() error {
		_, err := admin.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table)
		return err
	})
	t.newPod = func(context.Context) (shedlock.LockProvider, error) {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return nil, err
		}
		t.onClose(db.Close)
		p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
		if err != nil {
			return nil, err
		}
		t.onClose(p.Close)
		return p, nil
	}
	t.statements = func(ctx context.Context) (int64, error) {
		var name string
		var n int64
		err := admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n)
		return n, err
	}
	if t.floor, err = mysqlFloor(ctx, admin, version, table, mostFor); err != nil {
		_ = t.close()
		return nil, "", err
	}
	return t, version, nil
}

// mysqlFloor prepares the two statements, with the per-statement UTC pin the
// provider uses, on the admin pool and returns one cycle of them on a row of
// its own.
func mysqlFloor(ctx context.Context, db *sql.DB, version, table string, mostFor time.Duration) (func(context.Context) error, error) {
	pin := func(stmt string) string { return floor.MySQL(stmt, table, version) }
	const owner, name = "floor-owner", "floor"
	if _, err := db.ExecContext(ctx, "INSERT INTO `"+table+"` (name, lock_until, locked_at, locked_by) "+
		"VALUES (?, '2000-01-01', '2000-01-01', ?)", name, owner); err != nil {
		return nil, fmt.Errorf("floor row: %w", err)
	}
	return preparedCycle(ctx, db, pin(floor.MySQLAcquire), pin(floor.MySQLRelease),
		[]any{name, mostFor.Microseconds(), owner, owner, mostFor.Microseconds()}, []any{int64(0), int64(0), name, owner})
}
