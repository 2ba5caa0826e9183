package shedlock

import (
	"context"
	"time"
)

var _ Admin = (*MySQLProvider)(nil)

// Locks returns every lock in the table, by name, with the database's view of
// whether each is held now. See [Admin].
func (p *MySQLProvider) Locks(ctx context.Context) ([]LockInfo, error) {
	return adminLocks(ctx, p.store)
}

// Inspect returns the lock of exactly this name (not another that the name
// column's collation makes equal); ErrLockNotFound if there is none.
func (p *MySQLProvider) Inspect(ctx context.Context, name string) (LockInfo, error) {
	return adminInspect(ctx, p.store, name)
}

// ForceUnlock frees the lock of exactly this name whoever holds it, and returns
// it as it was just before. Read [Admin] for when that is safe.
func (p *MySQLProvider) ForceUnlock(ctx context.Context, name string) (LockInfo, error) {
	return adminForceUnlock(ctx, p.store, name)
}

// HealthCheck reports whether the server is reachable and the table usable for
// locks. See [Admin].
func (p *MySQLProvider) HealthCheck(ctx context.Context) error {
	return adminHealthCheck(ctx, p.store)
}

func (s *mysqlStore) adminTable() string { return s.tableName }

func (s *mysqlStore) ready(ctx context.Context) error {
	_, err := s.prepared(ctx)
	return err
}

func (s *mysqlStore) probe(ctx context.Context) error {
	p, err := s.prepared(ctx)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, p.sqlOf(mysqlProbe))
	return err
}

func (s *mysqlStore) rows(ctx context.Context, name string) ([]lockRow, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return nil, err
	}
	q, args := p.sqlOf(mysqlAllLocks), []any(nil)
	if name != "" {
		q, args = p.sqlOf(mysqlOneLock), []any{name, name}
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

func (s *mysqlStore) clear(ctx context.Context, r lockRow) (bool, error) {
	p, err := s.prepared(ctx)
	if err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, p.sqlOf(mysqlForceUnlock), ForceUnlockedBy, r.Name, r.Name, r.LockedBy, r.lockedAtKey)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
