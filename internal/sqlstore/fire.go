package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// LastSuccessColumn is the column of migration 0003: the fire time, in
// milliseconds since 1970, of the lock's last run that succeeded (CatchUp).
const LastSuccessColumn = "last_success"

// FireStore is a Store whose table can record, beside each lock, the fire time
// of the lock's last run that succeeded. Each method fails with NoLastSuccess's
// error on a table without the column: only CatchUp jobs use them, and a table
// without it keeps working for every other job. Fire times are milliseconds
// since 1970.
type FireStore interface {
	// AddRow makes the name's row, free, if it has none, and changes nothing
	// otherwise; a store whose AcquireFire makes the row itself does nothing.
	AddRow(ctx context.Context, a Args) error
	// AcquireFire takes the row as Update does, on the further condition that
	// its recorded fire time is older than fire, or none: one statement, so
	// that a fire time that succeeded is never taken again.
	AcquireFire(ctx context.Context, a Args, mostFor time.Duration, fire int64) (Grant, error)
	// ReleaseFire is Release, and records fire unless a later fire time is
	// recorded, in the same statement.
	ReleaseFire(ctx context.Context, a Args, leastFor time.Duration, fire int64) (bool, error)
	// LastFire reads the recorded fire time of name's row; ok is false when the
	// row has none, or there is no row.
	LastFire(ctx context.Context, name any) (fire int64, ok bool, err error)
}

// NoLastSuccess is the error of a FireStore method on a table without the
// column: it names the migration to run. dir is the store's folder in
// migrations.
func NoLastSuccess(table, dir string) error {
	return fmt.Errorf("%w: table %s has no column %s, where CatchUp records the last fire time that succeeded: "+
		"run migration 0003_add_last_success of migrations/%s (Java ShedLock pods keep working on the table), "+
		"or make the table with EnsureTable", lockerr.UnsafeStore, table, LastSuccessColumn, dir)
}

// FireReady returns what g's setup made, for a FireStore method: ready says
// whether the table it found has the last_success column; NoLastSuccess's
// error when not.
func FireReady[T any](ctx context.Context, g *Gate[T], ready func(*T) bool, table, dir string) (*T, error) {
	p, err := g.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !ready(p) {
		return nil, NoLastSuccess(table, dir)
	}
	return p, nil
}

// ScanFire reads the row of a LastFire query, the recorded fire time: ok is
// false when the row has none, or there is no row.
func ScanFire(row *sql.Row) (fire int64, ok bool, err error) {
	var v sql.NullInt64
	switch err := row.Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return v.Int64, v.Valid, nil
}

// TryLockFire is TryLock for the run of fire time fire (see FireStore): the
// lock is taken only while the recorded fire time is older. The lock it
// returns records fire when released with UnlockSucceeded.
func (e *Engine) TryLockFire(ctx context.Context, name string, mostFor time.Duration, fire time.Time) (*Lock, error) {
	fs, ok := e.store.(FireStore)
	if !ok {
		return nil, fmt.Errorf("%w: the store of table %s records no fire times", lockerr.UnsafeStore, e.store.Table())
	}
	mostFor = ceilMillis(mostFor)
	st, err := e.nameState(ctx, name)
	if err != nil {
		return nil, err
	}
	args := Args{Name: st.arg, Token: e.token()}
	ms := fire.UnixMilli()
	now := time.Now()
	if st.needsInsert(now, mostFor) {
		if _, err := statement(e, ctx, func(ctx context.Context) (bool, error) { return true, fs.AddRow(ctx, args) }); err != nil {
			return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
		}
		st.seen(now)
	}
	g, err := statement(e, ctx, func(ctx context.Context) (Grant, error) { return fs.AcquireFire(ctx, args, mostFor, ms) })
	if err != nil {
		return nil, fmt.Errorf("shedlock: acquire %q: %w", name, err)
	}
	if !g.OK {
		return nil, lockerr.NotAcquired
	}
	l := e.grant(name, args, g.Fence, now, mostFor, 0)
	l.fire, l.fireSet = ms, true
	return l, nil
}

// LastFire reads the fire time recorded for name.
func (e *Engine) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	fs, ok := e.store.(FireStore)
	if !ok {
		return time.Time{}, false, fmt.Errorf("%w: the store of table %s records no fire times", lockerr.UnsafeStore, e.store.Table())
	}
	r, err := statement(e, ctx, func(ctx context.Context) (fireRead, error) {
		ms, ok, err := fs.LastFire(ctx, name)
		return fireRead{ms, ok}, err
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("shedlock: read the last fire time of %q: %w", name, err)
	}
	if !r.ok {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(r.ms), true, nil
}

// fireRead is LastFire's answer through statement.
type fireRead struct {
	ms int64
	ok bool
}

// UnlockSucceeded releases the lock, keeping it until leastFor after it was
// taken, and records its fire time, in one statement; as Unlock otherwise.
func (l *Lock) UnlockSucceeded(ctx context.Context, leastFor time.Duration) error {
	fs, ok := l.e.store.(FireStore)
	if !ok || !l.fireSet {
		return fmt.Errorf("shedlock: lock %q was not taken for a fire time", l.name)
	}
	least := ceilMillis(leastFor)
	return l.unlock(ctx, func(ctx context.Context) (bool, error) { return fs.ReleaseFire(ctx, l.args, least, l.fire) })
}
