package shedlock

import (
	"context"
	"fmt"
	"strings"
	"time"
)

var _ Admin = (*SQLiteProvider)(nil)

// Locks returns every lock in the table, by name, with SQLite's view of whether
// each is held now. See [Admin].
func (p *SQLiteProvider) Locks(ctx context.Context) ([]LockInfo, error) {
	return adminLocks(ctx, p.store)
}

// Inspect returns the lock of this name; ErrLockNotFound if there is none.
func (p *SQLiteProvider) Inspect(ctx context.Context, name string) (LockInfo, error) {
	return adminInspect(ctx, p.store, name)
}

// ForceUnlock frees the lock of this name whoever holds it, and returns it as it
// was just before. Read [Admin] for when that is safe.
func (p *SQLiteProvider) ForceUnlock(ctx context.Context, name string) (LockInfo, error) {
	return adminForceUnlock(ctx, p.store, name)
}

// HealthCheck reports whether the database file is usable for locks: the table
// is there and can be written. See [Admin].
func (p *SQLiteProvider) HealthCheck(ctx context.Context) error {
	return adminHealthCheck(ctx, p.store)
}

func (s *sqliteStore) adminTable() string { return s.tableName }

func (s *sqliteStore) sqlOf(stmt string) string { return strings.ReplaceAll(stmt, "{t}", s.table) }

func (s *sqliteStore) ready(ctx context.Context) error {
	_, err := s.setup.get(ctx, s.prepare)
	return err
}

func (s *sqliteStore) probe(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, s.sqlOf(sqliteProbe))
	return err
}

func (s *sqliteStore) rows(ctx context.Context, name string) ([]lockRow, error) {
	if _, err := s.setup.get(ctx, s.prepare); err != nil {
		return nil, err
	}
	q, args := s.sqlOf(sqliteAllLocks), []any(nil)
	if name != "" {
		q, args = s.sqlOf(sqliteOneLock), []any{name}
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []lockRow
	for rows.Next() {
		var r lockRow
		var atText string
		var at, until, left int64
		if err := rows.Scan(&r.Name, &r.LockedBy, &atText, &at, &until, &r.Held, &left); err != nil {
			return nil, fmt.Errorf("%w (are locked_at and lock_until times SQLite can read?)", err)
		}
		r.LockedAt, r.LockUntil = time.UnixMilli(at).UTC(), time.UnixMilli(until).UTC()
		if r.Held {
			r.TimeLeft = time.Duration(left) * time.Millisecond
		}
		r.lockedAtKey = atText
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqliteStore) clear(ctx context.Context, r lockRow) (bool, error) {
	if _, err := s.setup.get(ctx, s.prepare); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, s.sqlOf(sqliteForceUnlock), ForceUnlockedBy, r.Name, r.LockedBy, r.lockedAtKey)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
