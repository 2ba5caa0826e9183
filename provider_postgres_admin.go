package shedlock

import (
	"context"
	"strings"
	"time"
)

var _ Admin = (*PostgresProvider)(nil)

// Locks returns every lock in the table, by name, with the database's view of
// whether each is held now. See [Admin].
func (p *PostgresProvider) Locks(ctx context.Context) ([]LockInfo, error) {
	return adminLocks(ctx, p.store)
}

// Inspect returns the lock of exactly this name (byte for byte, whatever the
// name column's collation); ErrLockNotFound if there is none.
func (p *PostgresProvider) Inspect(ctx context.Context, name string) (LockInfo, error) {
	return adminInspect(ctx, p.store, name)
}

// ForceUnlock frees the lock of exactly this name whoever holds it, and returns
// it as it was just before. Read [Admin] for when that is safe.
func (p *PostgresProvider) ForceUnlock(ctx context.Context, name string) (LockInfo, error) {
	return adminForceUnlock(ctx, p.store, name)
}

// HealthCheck reports whether the server is reachable, the session can write
// and the table is usable for locks. See [Admin].
func (p *PostgresProvider) HealthCheck(ctx context.Context) error {
	return adminHealthCheck(ctx, p.store)
}

func (s *postgresStore) adminTable() string { return strings.ReplaceAll(s.table, `"`, "") }

func (s *postgresStore) ready(ctx context.Context) error {
	_, err := s.prepared(ctx)
	return err
}

// sqlOf names the table and "now" in the type of its time columns.
func (s *postgresStore) sqlOf(ctx context.Context, stmt string) (string, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return "", err
	}
	now := postgresNowUTC
	if p.tbl.instant() {
		now = postgresNowInstant
	}
	return strings.NewReplacer("{t}", s.table, "{now}", now).Replace(stmt), nil
}

func (s *postgresStore) probe(ctx context.Context) error {
	q, err := s.sqlOf(ctx, postgresProbe)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, q)
	return err
}

func (s *postgresStore) rows(ctx context.Context, name string) ([]lockRow, error) {
	q, err := s.sqlOf(ctx, postgresAllLocks)
	args := []any(nil)
	if name != "" {
		q, err = s.sqlOf(ctx, postgresOneLock)
		args = []any{name}
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []lockRow
	for rows.Next() {
		var r lockRow
		var at, until, left int64
		if err := rows.Scan(&r.Name, &r.LockedBy, &at, &until, &r.Held, &left); err != nil {
			return nil, err
		}
		r.LockedAt, r.LockUntil = time.UnixMicro(at).UTC(), time.UnixMicro(until).UTC()
		if r.Held {
			r.TimeLeft = time.Duration(left) * time.Microsecond
		}
		r.lockedAtKey = at
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *postgresStore) clear(ctx context.Context, r lockRow) (bool, error) {
	q, err := s.sqlOf(ctx, postgresForceUnlock)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, q, ForceUnlockedBy, r.Name, r.LockedBy, r.lockedAtKey)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
