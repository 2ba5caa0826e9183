package shedlock

import (
	"context"
	"time"
)

// sqliteStore runs the provider's statements for sqlcore.Engine. SQLite counts
// every row an UPDATE's WHERE matched as changed, even when the values stay the
// same, so a 0 from RowsAffected always means "not ours": no confirming SELECT.
type sqliteStore SQLiteProvider

func (s *sqliteStore) exec(ctx context.Context, which int, args ...any) (bool, error) {
	st, err := (*SQLiteProvider)(s).statements(ctx)
	if err != nil {
		return false, err
	}
	return execChanged(ctx, st[which], args...)
}

// client returns this process's now and now+d, formatted, in client-clock mode.
func (s *sqliteStore) client(d time.Duration) (now, later string, ok bool) {
	if s.opts.now == nil {
		return "", "", false
	}
	t := s.opts.now().UTC()
	return t.Format(sqliteTimeLayout), t.Add(d).Format(sqliteTimeLayout), true
}

func (s *sqliteStore) Insert(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		return s.exec(ctx, stmtInsert, name, later, now, owner)
	}
	return s.exec(ctx, stmtInsert, name, mostFor.Milliseconds(), owner)
}

func (s *sqliteStore) Update(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		nowArg := any(now) // boxed once for both places: one allocation, not two
		return s.exec(ctx, stmtUpdate, later, nowArg, owner, name, nowArg)
	}
	return s.exec(ctx, stmtUpdate, mostFor.Milliseconds(), owner, name)
}

func (s *sqliteStore) Release(ctx context.Context, name, owner any, leastFor time.Duration) (bool, error) {
	if now, _, ok := s.client(0); ok {
		return s.exec(ctx, stmtRelease, leastFor.Milliseconds(), now, name, owner)
	}
	return s.exec(ctx, stmtRelease, leastFor.Milliseconds(), name, owner)
}

func (s *sqliteStore) Extend(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	if now, later, ok := s.client(mostFor); ok {
		return s.exec(ctx, stmtExtend, later, name, owner, now)
	}
	return s.exec(ctx, stmtExtend, mostFor.Milliseconds(), name, owner)
}
