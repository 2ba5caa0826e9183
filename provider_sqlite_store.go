package shedlock

import (
	"context"
	"time"
)

// sqliteStore runs the provider's statements for sqlcore.Engine. SQLite counts
// every row an UPDATE's WHERE matched as changed, even when the values stay the
// same, so a 0 from RowsAffected always means "not ours": no confirming SELECT.
type sqliteStore SQLiteProvider

func (s *sqliteStore) exec(ctx context.Context, stmt string, args ...any) (bool, error) {
	res, err := s.db.ExecContext(ctx, stmt, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// client returns this process's now and now+d, formatted, in client-clock mode.
func (s *sqliteStore) client(d time.Duration) (now, later string, ok bool) {
	if s.opts.now == nil {
		return "", "", false
	}
	t := s.opts.now().UTC()
	return t.Format(sqliteTimeLayout), t.Add(d).Format(sqliteTimeLayout), true
}

func (s *sqliteStore) Insert(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		return s.exec(ctx, s.stmts.insert, name, later, now, owner)
	}
	return s.exec(ctx, s.stmts.insert, name, sqliteModifier(mostFor), owner)
}

func (s *sqliteStore) Update(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		return s.exec(ctx, s.stmts.update, later, now, owner, name, now)
	}
	return s.exec(ctx, s.stmts.update, sqliteModifier(mostFor), owner, name)
}

func (s *sqliteStore) Release(ctx context.Context, name, owner string, leastFor time.Duration) (bool, error) {
	if now, _, ok := s.client(0); ok {
		return s.exec(ctx, s.stmts.release, sqliteModifier(leastFor), now, name, owner)
	}
	return s.exec(ctx, s.stmts.release, sqliteModifier(leastFor), name, owner)
}

func (s *sqliteStore) Extend(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		return s.exec(ctx, s.stmts.extend, later, name, owner, now)
	}
	return s.exec(ctx, s.stmts.extend, sqliteModifier(mostFor), name, owner)
}
