package shedlock

import (
	"context"
	"database/sql"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlcore"
)

// mysqlStore runs the provider's statements for sqlcore.Engine.
type mysqlStore MySQLProvider

func (s *mysqlStore) p() *MySQLProvider { return (*MySQLProvider)(s) }

func (s *mysqlStore) exec(ctx context.Context, pick func(*mysqlStatements) *sql.Stmt, args ...any) (bool, error) {
	st, err := s.p().statements(ctx)
	if err != nil {
		return false, err
	}
	return execChanged(ctx, pick(st), args...)
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

func (s *mysqlStore) Insert(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	insert := func(st *mysqlStatements) *sql.Stmt { return st.insert }
	if now, ok := s.clientNow(); ok {
		return s.exec(ctx, insert, name, s.clientLater(mostFor), now, owner)
	}
	return s.exec(ctx, insert, name, mostFor.Microseconds(), owner)
}

// mysqlStore takes the steady-state arguments boxed once by the engine.
var _ sqlcore.BoxedStore = (*mysqlStore)(nil)

func (s *mysqlStore) Update(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	return s.UpdateBoxed(ctx, name, owner, mostFor)
}

func (s *mysqlStore) Release(ctx context.Context, name, owner string, leastFor time.Duration) (bool, error) {
	return s.ReleaseBoxed(ctx, name, owner, leastFor)
}

// UpdateBoxed is Update; name and owner hold strings.
func (s *mysqlStore) UpdateBoxed(ctx context.Context, name, owner any, mostFor time.Duration) (bool, error) {
	update := func(st *mysqlStatements) *sql.Stmt { return st.update }
	if now, ok := s.clientNow(); ok {
		nowArg := any(now) // boxed once for both places: one allocation, not two
		return s.exec(ctx, update, s.clientLater(mostFor), nowArg, owner, name, nowArg)
	}
	return s.exec(ctx, update, mostFor.Microseconds(), owner, name)
}

// ReleaseBoxed is Release; name and owner hold strings.
func (s *mysqlStore) ReleaseBoxed(ctx context.Context, name, owner any, leastFor time.Duration) (bool, error) {
	release := func(st *mysqlStatements) *sql.Stmt { return st.release }
	// Each value is boxed once though sent twice: one allocation, not two.
	least := any(leastFor.Microseconds())
	var changed bool
	var err error
	if now, ok := s.clientNow(); ok {
		nowArg := any(now)
		changed, err = s.exec(ctx, release, least, nowArg, least, nowArg, name, owner)
	} else {
		changed, err = s.exec(ctx, release, least, least, name, owner)
	}
	if err != nil || changed {
		return changed, err
	}
	return s.count(ctx, func(st *mysqlStatements) string { return st.owned }, name, owner)
}

func (s *mysqlStore) Extend(ctx context.Context, name, owner string, mostFor time.Duration) (bool, error) {
	extend := func(st *mysqlStatements) *sql.Stmt { return st.extend }
	var changed bool
	var err error
	now, client := s.clientNow()
	if client {
		changed, err = s.exec(ctx, extend, s.clientLater(mostFor), name, owner, now)
	} else {
		changed, err = s.exec(ctx, extend, mostFor.Microseconds(), name, owner)
	}
	if err != nil || changed {
		return changed, err
	}
	args := []any{name, owner}
	if client {
		args = append(args, now)
	}
	return s.count(ctx, func(st *mysqlStatements) string { return st.ownedUnexpired }, args...)
}

// count runs a rare confirming SELECT COUNT(*) and reports whether it found a row.
func (s *mysqlStore) count(ctx context.Context, pick func(*mysqlStatements) string, args ...any) (bool, error) {
	st, err := s.p().statements(ctx)
	if err != nil {
		return false, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, pick(st), args...).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}
