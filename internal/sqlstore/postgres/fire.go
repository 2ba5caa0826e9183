package postgres

import (
	"context"
	"database/sql"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

var _ sqlstore.FireStore = (*Store)(nil)

// fire returns the first use's statements, or the error that names the
// migration when the table has no last_success column.
func (s *Store) fire(ctx context.Context) (*prepared, error) {
	return sqlstore.FireReady(ctx, s.setup, func(p *prepared) bool { return p.tbl.lastSuccess }, s.Table(), "postgres")
}

func (p *prepared) fireRow(ctx context.Context, db *sql.DB, which int, args ...any) *sql.Row {
	if p.fireStmts != nil {
		return p.fireStmts[which].QueryRowContext(ctx, args...)
	}
	return db.QueryRowContext(ctx, p.fireTexts[which], args...)
}

// AddRow sends nothing: AcquireFire's upsert makes a missing row itself.
func (s *Store) AddRow(ctx context.Context, _ sqlstore.Args) error {
	_, err := s.fire(ctx)
	return err
}

// AcquireFire takes the row, making it if needed, if its lock has run out and
// its recorded fire time is older than fire. A serialization failure means
// another pod got there first.
func (s *Store) AcquireFire(ctx context.Context, a sqlstore.Args, mostFor time.Duration, fire int64) (sqlstore.Grant, error) {
	p, err := s.fire(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	row := p.fireRow(ctx, s.db, pgFireAcquire, a.Name, mostFor.Milliseconds(), a.Token, fire)
	g, err := s.proveRow(p, row, p.tbl.fence, a.Token)
	if err != nil && sqlState(err) == "40001" { // serialization_failure
		return sqlstore.Grant{}, nil
	}
	return g, err
}

// ReleaseFire ends the token's lock, keeping it until leastFor after it was
// taken, and records fire unless a later fire time is recorded.
func (s *Store) ReleaseFire(ctx context.Context, a sqlstore.Args, leastFor time.Duration, fire int64) (bool, error) {
	p, err := s.fire(ctx)
	if err != nil {
		return false, err
	}
	return s.serialized(ctx, func() (bool, error) {
		var res sql.Result
		var err error
		args := []any{leastFor.Milliseconds(), a.Name, a.Token, fire}
		if p.fireStmts != nil {
			res, err = p.fireStmts[pgFireRelease].ExecContext(ctx, args...)
		} else {
			res, err = s.db.ExecContext(ctx, p.fireTexts[pgFireRelease], args...)
		}
		return sqlstore.Changed(res, readOnly(err))
	})
}

// LastFire reads the fire time recorded for name.
func (s *Store) LastFire(ctx context.Context, name any) (int64, bool, error) {
	p, err := s.fire(ctx)
	if err != nil {
		return 0, false, err
	}
	return sqlstore.ScanFire(p.fireRow(ctx, s.db, pgFireLast, name))
}
