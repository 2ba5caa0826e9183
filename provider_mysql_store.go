package shedlock

import (
	"context"
	"time"
)

// mysqlStore runs the provider's statements for sqlcore.Engine.
type mysqlStore MySQLProvider

func (s *mysqlStore) statements(ctx context.Context) (*mysqlStatements, error) {
	return (*MySQLProvider)(s).statements(ctx)
}

func (s *mysqlStore) exec(ctx context.Context, which int, args ...any) (bool, error) {
	st, err := s.statements(ctx)
	if err != nil {
		return false, err
	}
	return execChanged(ctx, st.prepared[which], args...)
}

func (s *mysqlStore) clientNow() (now string, ok bool) {
	if s.opts.now == nil {
		return "", false
	}
	return s.opts.now().UTC().Format(mysqlTimeLayout), true
}

func (s *mysqlStore) clientLater(d time.Duration) string {
	return s.opts.now().Add(d).UTC().Format(mysqlTimeLayout)
}

func (s *mysqlStore) Insert(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	if now, ok := s.clientNow(); ok {
		return s.exec(ctx, stmtInsert, name, s.clientLater(mostFor), now, owner)
	}
	return s.exec(ctx, stmtInsert, name, mostFor.Microseconds(), owner)
}

func (s *mysqlStore) Update(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	if now, ok := s.clientNow(); ok {
		nowArg := any(now) // boxed once for both places: one allocation, not two
		return s.exec(ctx, stmtUpdate, s.clientLater(mostFor), nowArg, owner, name, nowArg)
	}
	return s.exec(ctx, stmtUpdate, mostFor.Microseconds(), owner, name)
}

func (s *mysqlStore) Release(ctx context.Context, name, owner any, leastFor time.Duration) (bool, error) {
	// Each value is boxed once though sent twice: one allocation, not two.
	least := any(leastFor.Microseconds())
	var changed bool
	var err error
	if now, ok := s.clientNow(); ok {
		nowArg := any(now)
		changed, err = s.exec(ctx, stmtRelease, least, nowArg, least, nowArg, name, owner)
	} else {
		changed, err = s.exec(ctx, stmtRelease, least, least, name, owner)
	}
	if err != nil || changed {
		return changed, err
	}
	return s.found(ctx, false, name, owner)
}

func (s *mysqlStore) Extend(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	var changed bool
	var err error
	now, client := s.clientNow()
	if client {
		changed, err = s.exec(ctx, stmtExtend, s.clientLater(mostFor), name, owner, now)
	} else {
		changed, err = s.exec(ctx, stmtExtend, mostFor.Microseconds(), name, owner)
	}
	if err != nil || changed {
		return changed, err
	}
	args := []any{name, owner}
	if client {
		args = append(args, now)
	}
	return s.found(ctx, true, args...)
}

// found runs a rare confirming SELECT COUNT(*) after an UPDATE reported 0 rows,
// which MySQL also reports for a row left as it was: the row is ours (and, with
// unexpired, not expired) when it finds one.
func (s *mysqlStore) found(ctx context.Context, unexpired bool, args ...any) (bool, error) {
	st, err := s.statements(ctx)
	if err != nil {
		return false, err
	}
	q := st.owned
	if unexpired {
		q = st.ownedUnexpired
	}
	var n int
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}
