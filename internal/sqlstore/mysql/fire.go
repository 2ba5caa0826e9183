package mysql

import (
	"context"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Indexes of CatchUp's statements in prepared.fire.
const (
	fireAddRow = iota
	fireAcquire
	fireRelease
	fireLast
)

var _ sqlstore.FireStore = (*Store)(nil)

// fireTexts are CatchUp's statements, prepared with the others on a table
// that has the last_success column.
func fireTexts(fence bool) []string {
	acquire := fireAcquireSQL
	if fence {
		acquire = fencedFireAcquireSQL
	}
	return []string{addRowSQL, acquire, fireReleaseSQL, lastFireSQL}
}

// fireStmts returns the prepared statements, or the error that names the
// migration when the table has no last_success column.
func (s *Store) fireStmts(ctx context.Context) (*prepared, error) {
	return sqlstore.FireReady(ctx, s.setup, func(p *prepared) bool { return p.fire != nil }, s.tableName, "mysql")
}

// AddRow makes the name's row, free, if it has none.
func (s *Store) AddRow(ctx context.Context, a sqlstore.Args) error {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return err
	}
	_, err = p.fire[fireAddRow].ExecContext(ctx, a.Name, a.Token)
	return conflictOrError(err)
}

// AcquireFire takes the row if its lock has run out and its recorded fire
// time is older than fire. A conflict that rolled the statement back means
// another pod's statement won: not acquired.
func (s *Store) AcquireFire(ctx context.Context, a sqlstore.Args, mostFor time.Duration, fire int64) (sqlstore.Grant, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	res, err := p.fire[fireAcquire].ExecContext(ctx, a.Token, mostFor.Microseconds(), a.Name, fire)
	if err != nil {
		return sqlstore.Grant{}, conflictOrError(err)
	}
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return sqlstore.Grant{}, err
	}
	g := sqlstore.Grant{OK: true}
	if p.fence {
		if g.Fence, err = res.LastInsertId(); err == nil && g.Fence <= 0 {
			err = fmt.Errorf("shedlock: the acquiring statement on %s returned no fencing token (LAST_INSERT_ID %d)", s.table, g.Fence)
		}
		if err != nil {
			return sqlstore.Grant{}, err
		}
	}
	return g, nil
}

// ReleaseFire ends the token's lock, keeping it until leastFor after it was
// taken, and records fire unless a later fire time is recorded.
func (s *Store) ReleaseFire(ctx context.Context, a sqlstore.Args, leastFor time.Duration, fire int64) (bool, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return false, err
	}
	least := leastFor.Microseconds()
	changed, err := sqlstore.Changed(p.fire[fireRelease].ExecContext(ctx, fire, least, least, a.Name, a.Token))
	if err != nil || changed {
		return changed, nodeError(err)
	}
	return s.found(ctx, false, a)
}

// LastFire reads the fire time recorded for name.
func (s *Store) LastFire(ctx context.Context, name any) (int64, bool, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return 0, false, err
	}
	return sqlstore.ScanFire(p.fire[fireLast].QueryRowContext(ctx, name))
}
