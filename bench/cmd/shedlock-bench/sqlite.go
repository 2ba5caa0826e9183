package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/bench/floor"
)

// openSQLite returns the SQLite target on path, or on a file in a temporary
// directory removed on close. Every pod opens the file with a pool of its own, as
// processes on one host would.
func openSQLite(ctx context.Context, path string, mostFor time.Duration) (*target, error) {
	t := &target{}
	if path == "" {
		dir, err := os.MkdirTemp("", "shedlock-bench-")
		if err != nil {
			return nil, err
		}
		t.onClose(func() error { return os.RemoveAll(dir) })
		path = filepath.Join(dir, "bench.db")
	}
	dsn := "file:" + path + "?" + shedlock.SQLiteDSNParams
	open := func() (*sql.DB, error) {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			return nil, err
		}
		t.onClose(db.Close)
		return db, nil
	}
	admin, err := open()
	if err != nil {
		_ = t.close()
		return nil, err
	}
	var version string
	if err := admin.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		_ = t.close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	t.label = "SQLite " + version + " (modernc.org/sqlite, WAL)"
	p, err := shedlock.NewSQLiteProvider(admin)
	if err != nil {
		_ = t.close()
		return nil, err
	}
	if err := p.EnsureTable(ctx); err != nil {
		_ = t.close()
		return nil, err
	}
	t.newPod = func(context.Context) (shedlock.LockProvider, error) {
		db, err := open()
		if err != nil {
			return nil, err
		}
		p, err := shedlock.NewSQLiteProvider(db)
		if err != nil {
			return nil, err
		}
		t.onClose(p.Close)
		return p, nil
	}
	if t.floor, err = sqliteFloor(ctx, admin, mostFor); err != nil {
		_ = t.close()
		return nil, err
	}
	return t, nil
}

func sqliteFloor(ctx context.Context, db *sql.DB, mostFor time.Duration) (func(context.Context) error, error) {
	const owner, name = "floor-owner", "floor"
	if _, err := db.ExecContext(ctx, "INSERT OR REPLACE INTO shedlock (name, lock_until, locked_at, locked_by) "+
		"VALUES (?, '2000-01-01 00:00:00.000', '2000-01-01 00:00:00.000', ?)", name, owner); err != nil {
		return nil, fmt.Errorf("floor row: %w", err)
	}
	return preparedCycle(ctx, db, floor.SQLite(floor.SQLiteAcquire, "shedlock"), floor.SQLite(floor.SQLiteRelease, "shedlock"),
		[]any{mostFor.Milliseconds(), owner, int64(0), name}, []any{int64(0), name, owner})
}
