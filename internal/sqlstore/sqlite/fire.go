package sqlite

import (
	"context"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Indexes of CatchUp's statements in prepared.fire.
const (
	fireAddRow = iota
	fireUpdate
	fireRelease
	fireLast
)

var _ sqlstore.FireStore = (*Store)(nil)

// fireTexts are CatchUp's statements, prepared with the others on a table
// that has the last_success column.
func fireTexts(fence bool) []string {
	update := fireUpdateSQL
	if fence {
		update = fencedFireUpdateSQL
	}
	return []string{addRowSQL, update, fireReleaseSQL, lastFireSQL}
}

// fireStmts returns CatchUp's statements, or the error that names the
// migration when the table has no last_success column.
func (s *Store) fireStmts(ctx context.Context) (*prepared, error) {
	return sqlstore.FireReady(ctx, s.setup, func(p *prepared) bool { return p.fire != nil }, s.tableName, "sqlite")
}

// AddRow makes the name's row, free, if it has none.
func (s *Store) AddRow(ctx context.Context, a sqlstore.Args) error {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return err
	}
	_, err = p.fire[fireAddRow].ExecContext(ctx, a.Name, a.Token)
	return err
}

// AcquireFire takes the row if its lock has run out and its recorded fire
// time is older than fire.
func (s *Store) AcquireFire(ctx context.Context, a sqlstore.Args, mostFor time.Duration, fire int64) (sqlstore.Grant, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return sqlstore.Grant{}, err
	}
	if !p.fence {
		return grant(ctx, p.fire[fireUpdate], false, mostFor.Milliseconds(), a.Token, a.Name, fire)
	}
	return grant(ctx, p.fire[fireUpdate], true, mostFor.Milliseconds(), a.Token, hostMicros(), a.Name, fire)
}

// ReleaseFire ends the token's lock, keeping it until leastFor after it was
// taken, and records fire unless a later fire time is recorded.
func (s *Store) ReleaseFire(ctx context.Context, a sqlstore.Args, leastFor time.Duration, fire int64) (bool, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(p.fire[fireRelease].ExecContext(ctx, leastFor.Milliseconds(), fire, a.Name, a.Token))
}

// LastFire reads the fire time recorded for name.
func (s *Store) LastFire(ctx context.Context, name any) (int64, bool, error) {
	p, err := s.fireStmts(ctx)
	if err != nil {
		return 0, false, err
	}
	return sqlstore.ScanFire(p.fire[fireLast].QueryRowContext(ctx, name))
}
