package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/control"
	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// ForceUnlockedBy is what ForceUnlock writes to locked_by. No provider's owner
// can equal it (theirs all contain '#'), so that the holder it was taken from
// finds the lock lost.
const ForceUnlockedBy = "(force-unlocked)"

// Info is one lock row as the database sees it (shedlock.LockInfo).
type Info struct {
	Name      string
	LockedBy  string
	LockedAt  time.Time
	LockUntil time.Time
	Held      bool
	TimeLeft  time.Duration
	control.Control
}

// Row is a row as a store read it: what it reports, and locked_at and
// lock_until in the unit in which the store compares them again.
type Row struct {
	Info
	LockedAtKey, LockUntilKey int64
}

// Locks returns every lock in the table, by name.
func (e *Engine) Locks(ctx context.Context) ([]Info, error) {
	if err := e.store.Ready(ctx); err != nil {
		return nil, err
	}
	rows, err := bounded(ctx, func(ctx context.Context) ([]Row, error) { return e.store.LockRows(ctx, "") })
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the locks of table %s: %w", e.store.Table(), err)
	}
	locks := make([]Info, len(rows))
	for i, r := range rows {
		locks[i] = r.Info
	}
	return locks, nil
}

// HealthCheck runs the first-use checks, then a statement that needs the table
// and changes nothing.
func (e *Engine) HealthCheck(ctx context.Context) error {
	if err := e.store.Ready(ctx); err != nil {
		return err
	}
	if _, err := bounded(ctx, func(ctx context.Context) (bool, error) { return true, e.store.Probe(ctx) }); err != nil {
		return fmt.Errorf("shedlock: health check of table %s: %w", e.store.Table(), err)
	}
	return nil
}

// Inspect returns the lock of exactly name.
func (e *Engine) Inspect(ctx context.Context, name string) (Info, error) {
	r, err := e.row(ctx, name)
	return r.Info, err
}

func (e *Engine) row(ctx context.Context, name string) (Row, error) {
	if name == "" {
		return Row{}, fmt.Errorf("%w: the name is empty", lockerr.LockNotFound)
	}
	if err := e.store.Ready(ctx); err != nil {
		return Row{}, err
	}
	rows, err := bounded(ctx, func(ctx context.Context) ([]Row, error) { return e.store.LockRows(ctx, name) })
	if err != nil {
		return Row{}, fmt.Errorf("shedlock: read lock %q of table %s: %w", name, e.store.Table(), err)
	}
	if len(rows) == 0 {
		return Row{}, fmt.Errorf("%w: %q in table %s", lockerr.LockNotFound, name, e.store.Table())
	}
	return rows[0], nil
}

// ScanRows reads the rows of a dialect's lock query, whose columns are name,
// locked_by, locked_at, lock_until, held and time left, the times as whole
// c.TimeUnit since 1970 in UTC; on a table with ControlColumns, three more:
// paused (by the database's clock), when that pause ends (milliseconds since
// 1970, NULL while paused until resumed) and the run requests pending. It
// takes a query's results as they come:
// caps.ScanRows(db.QueryContext(ctx, q, args...)).
func (c Caps) ScanRows(rows *sql.Rows, err error) ([]Row, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []Row
	for rows.Next() {
		var r Row
		var left int64
		var until sql.NullInt64
		dest := []any{&r.Name, &r.LockedBy, &r.LockedAtKey, &r.LockUntilKey, &r.Held, &left}
		if len(cols) > len(dest) {
			dest = append(dest, &r.Paused, &until, &r.RunRequests)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		r.LockedAt = c.timeOf(r.LockedAtKey)
		r.LockUntil = c.timeOf(r.LockUntilKey)
		if r.Held {
			r.TimeLeft = time.Duration(left) * c.TimeUnit
		}
		if r.Paused && until.Valid {
			r.PausedUntil = time.UnixMilli(until.Int64).UTC()
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// timeOf is the instant of a time the lock query returned.
func (c Caps) timeOf(key int64) time.Time {
	return time.Unix(0, 0).Add(time.Duration(key) * c.TimeUnit).UTC()
}

// keyOf is the inverse of timeOf: the form in which the store compares t.
func (c Caps) keyOf(t time.Time) int64 {
	return int64(t.Sub(time.Unix(0, 0)) / c.TimeUnit)
}

// forceUnlockAttempts bounds how often ForceUnlock reads again because the lock
// changed hands between its read and its write.
const forceUnlockAttempts = 5

// ForceUnlock reads the row, then frees it only if it is still as read, so that
// the holder it reports is the one it took the lock from, held or not as it
// reports.
func (e *Engine) ForceUnlock(ctx context.Context, name string) (Info, error) {
	for range forceUnlockAttempts {
		r, err := e.row(ctx, name)
		if err != nil {
			return Info{}, err
		}
		cleared, err := bounded(ctx, func(ctx context.Context) (bool, error) { return e.store.Clear(ctx, r) })
		if err != nil {
			return Info{}, fmt.Errorf("shedlock: force unlock %q in table %s: %w", name, e.store.Table(), err)
		}
		if cleared {
			return r.Info, nil
		}
	}
	return Info{}, fmt.Errorf("%w: force unlock %q in table %s: the lock changed hands %d times "+
		"while being freed; try again", lockerr.LockChanged, name, e.store.Table(), forceUnlockAttempts)
}

// ForceUnlockSeen frees the acquisition seen shows (the same holder and
// locked_at), never one taken since. An acquisition extended or released since
// it was seen is still that acquisition: it is freed as it is now, and
// returned as it was just before. Another acquisition is an error wrapping
// lockerr.LockChanged that says who holds the lock now.
func (e *Engine) ForceUnlockSeen(ctx context.Context, seen Info) (Info, error) {
	if err := e.store.Ready(ctx); err != nil {
		return Info{}, err
	}
	r := Row{Info: seen, LockedAtKey: e.caps.keyOf(seen.LockedAt), LockUntilKey: e.caps.keyOf(seen.LockUntil)}
	for range forceUnlockAttempts {
		cleared, err := bounded(ctx, func(ctx context.Context) (bool, error) { return e.store.Clear(ctx, r) })
		if err != nil {
			return Info{}, fmt.Errorf("shedlock: force unlock %q in table %s: %w", seen.Name, e.store.Table(), err)
		}
		if cleared {
			return r.Info, nil
		}
		now, err := e.row(ctx, seen.Name)
		if err != nil {
			return Info{}, err
		}
		if now.LockedBy != seen.LockedBy || now.LockedAtKey != r.LockedAtKey {
			return Info{}, fmt.Errorf("%w: lock %q in table %s: it was taken by %q at %s when shown, and is now "+
				"taken by %q at %s (held: %t); nothing was freed", lockerr.LockChanged, seen.Name, e.store.Table(),
				seen.LockedBy, seen.LockedAt.Format(time.RFC3339Nano), now.LockedBy,
				now.LockedAt.Format(time.RFC3339Nano), now.Held)
		}
		r = now
	}
	return Info{}, fmt.Errorf("%w: force unlock %q in table %s: its end moved %d times while being freed; try again",
		lockerr.LockChanged, seen.Name, e.store.Table(), forceUnlockAttempts)
}
