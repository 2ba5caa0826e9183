package mysql

import (
	"context"
	"fmt"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Ready runs the first-use checks, once they pass.
func (s *Store) Ready(ctx context.Context) error { return s.setup.Ready(ctx) }

// Probe runs a statement that needs the table and changes nothing.
func (s *Store) Probe(ctx context.Context) error {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, p.sqlOf(probeSQL))
	return err
}

// LockRows reads every lock row, or only that of exactly name.
func (s *Store) LockRows(ctx context.Context, name string) ([]sqlstore.Row, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return caps.ScanRows(s.db.QueryContext(ctx, p.sqlOf(allLocksSQL)))
	}
	return caps.ScanRows(s.db.QueryContext(ctx, p.sqlOf(oneLockSQL), name, name))
}

// Clear frees r's row if it still holds the acquisition r read.
func (s *Store) Clear(ctx context.Context, r sqlstore.Row) (bool, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(s.db.ExecContext(ctx, p.sqlOf(forceUnlockSQL),
		sqlstore.ForceUnlockedBy, r.Name, r.Name, r.LockedBy, r.LockedAtKey, r.LockUntilKey, r.Held))
}

// EnsureTable creates the table with the DDL of migrations/mysql.
func (s *Store) EnsureTable(ctx context.Context) error {
	ddl, err := sqlstore.DDL("mysql", s.table)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, ddl)
	if err == nil {
		return nil
	}
	// A user without the CREATE privilege gets an error even for a table that
	// exists: that table is what was asked for.
	schema, name := splitTable(s.tableName)
	var n int
	if qerr := s.db.QueryRowContext(ctx, tableExistsSQL, schema, name).Scan(&n); qerr == nil && n > 0 {
		return nil
	}
	return fmt.Errorf("shedlock: create table %s: %w", s.table, err)
}
