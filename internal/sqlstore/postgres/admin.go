package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Ready runs the first-use checks, once they pass.
func (s *Store) Ready(ctx context.Context) error { return s.setup.Ready(ctx) }

// sqlOf names the table and "now" in the type of its time columns.
func (s *Store) sqlOf(ctx context.Context, stmt string) (string, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return "", err
	}
	now := nowUTC
	if p.tbl.instant() {
		now = nowInstant
	}
	return strings.NewReplacer("{t}", s.table, "{now}", now).Replace(stmt), nil
}

// Probe runs a statement that needs the table and a session that can write,
// and changes nothing.
func (s *Store) Probe(ctx context.Context) error {
	q, err := s.sqlOf(ctx, probeSQL)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, q)
	return err
}

// LockRows reads every lock row, or only that of exactly name.
func (s *Store) LockRows(ctx context.Context, name string) ([]sqlstore.Row, error) {
	if name == "" {
		q, err := s.sqlOf(ctx, allLocksSQL)
		if err != nil {
			return nil, err
		}
		return caps.ScanRows(s.db.QueryContext(ctx, q))
	}
	q, err := s.sqlOf(ctx, oneLockSQL)
	if err != nil {
		return nil, err
	}
	return caps.ScanRows(s.db.QueryContext(ctx, q, name))
}

// Clear frees r's row if it still holds the acquisition r read.
func (s *Store) Clear(ctx context.Context, r sqlstore.Row) (bool, error) {
	q, err := s.sqlOf(ctx, forceUnlockSQL)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(s.db.ExecContext(ctx, q, sqlstore.ForceUnlockedBy, r.Name, r.LockedBy, r.LockedAtKey, r.LockUntilKey, r.Held))
}

// EnsureTable creates the table with the DDL of migrations/postgres. Pods that
// start together may all call it: PostgreSQL's CREATE TABLE IF NOT EXISTS can
// fail for all but one of them at once (a duplicate key in pg_type), and a
// table that exists when the error comes back is success.
func (s *Store) EnsureTable(ctx context.Context) error {
	ddl, err := sqlstore.DDL("postgres", s.table)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, ddl)
	if err == nil {
		return nil
	}
	var exists bool
	if qerr := s.db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", s.table).Scan(&exists); qerr == nil && exists {
		return nil
	}
	return fmt.Errorf("shedlock: create table %s: %w", s.table, err)
}
