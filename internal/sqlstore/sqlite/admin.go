package sqlite

import (
	"context"
	"fmt"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Ready runs the first-use checks, once they pass.
func (s *Store) Ready(ctx context.Context) error { return s.setup.Ready(ctx) }

// Probe runs a statement that needs the table and a writable database, and
// changes nothing.
func (s *Store) Probe(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, s.sqlOf(probeSQL))
	return err
}

// LockRows reads every lock row, or only that of name.
func (s *Store) LockRows(ctx context.Context, name string) ([]sqlstore.Row, error) {
	if name == "" {
		return caps.ScanRows(s.db.QueryContext(ctx, s.sqlOf(allLocksSQL)))
	}
	return caps.ScanRows(s.db.QueryContext(ctx, s.sqlOf(oneLockSQL), name))
}

// Clear frees r's row if it still holds the acquisition r read.
func (s *Store) Clear(ctx context.Context, r sqlstore.Row) (bool, error) {
	return sqlstore.Changed(s.db.ExecContext(ctx, s.sqlOf(forceUnlockSQL),
		sqlstore.ForceUnlockedBy, r.Name, r.LockedBy, r.LockedAtKey, r.LockUntilKey, r.Held))
}

// EnsureTable creates the table with the DDL of migrations/sqlite.
func (s *Store) EnsureTable(ctx context.Context) error {
	ddl, err := sqlstore.DDL("sqlite", s.table)
	if err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, ddl); err != nil {
		return fmt.Errorf("shedlock: create table %s: %w", s.table, err)
	}
	return nil
}
