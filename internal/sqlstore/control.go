package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// ControlColumns are the columns of migration 0004, NULL allowed, so that
// Java ShedLock's INSERT, which names none of them, keeps working:
//
//   - paused_at (BIGINT): when an operator paused the job, in milliseconds
//     since 1970 by the database's clock; NULL when it is not paused.
//   - paused_until (BIGINT): when the pause ends, in the same unit; NULL
//     while paused until resumed. A number, not a TIMESTAMP: MySQL's ends in
//     2038.
//   - runs_requested (BIGINT): how many runs RunNow asked for, ever.
//   - runs_done (BIGINT): how many of them ran (RunDone); the difference is
//     pending.
//   - runs_done_by (VARCHAR(255), as locked_by): the token of the
//     acquisition that marked a run done last, so that one acquisition marks
//     at most one, even when its RunDone is sent again.
//
// Both counts only grow, so that a request is never lost to a race between
// an operator's RunNow and a run's RunDone.
var ControlColumns = []string{"paused_at", "paused_until", "runs_requested", "runs_done", RunsDoneByColumn}

// RunsDoneByColumn is the one of ControlColumns that holds a token, not a
// number.
const RunsDoneByColumn = "runs_done_by"

// ControlMigration is the migration that adds ControlColumns.
const ControlMigration = "0004_add_control"

// ControlStore is a Store whose table can keep, beside each lock, a pause and
// run-now requests (ControlColumns). Its acquiring statements refuse a paused
// job (Grant.Paused) on such a table, and each method below fails with
// NoControl's error on a table without the columns, except RunRequests, for
// which such a table has no request. Times are milliseconds since 1970.
type ControlStore interface {
	// Pause pauses name until until (0: until resumed), making the row, free,
	// if the name has none.
	Pause(ctx context.Context, name string, until int64) error
	// Resume ends name's pause, if any.
	Resume(ctx context.Context, name string) error
	// RunNow counts one more run requested for name, making the row, free, if
	// the name has none, and returns how many are pending.
	RunNow(ctx context.Context, name string) (int64, error)
	// RunRequests returns the pending requests of those of names that have
	// some, by the name as given, with one statement.
	RunRequests(ctx context.Context, names []string) (map[string]int64, error)
	// RunDone counts one more run done for a's name, if one is pending and
	// a's token has marked none yet, while a's token holds the unexpired lock;
	// false when it does not.
	RunDone(ctx context.Context, a Args) (bool, error)
}

// NoControl is the error of a ControlStore method on a table without the
// columns: it names the migration. dir is the store's folder in migrations,
// missing the columns the table lacks.
func NoControl(table, dir string, missing []string) error {
	return fmt.Errorf("%w: table %s lacks %s, the columns where pause and run-now are kept: run migration %s of "+
		"migrations/%s (Java ShedLock pods keep working on the table, and do not honour a pause), or make the "+
		"table with EnsureTable; a provider sees new columns once made anew or closed",
		lockerr.UnsafeStore, table, strings.Join(missing, ", "), ControlMigration, dir)
}

// MissingControl returns which of ControlColumns have is false for.
func MissingControl(have func(column string) bool) []string {
	var missing []string
	for _, c := range ControlColumns {
		if !have(c) {
			missing = append(missing, c)
		}
	}
	return missing
}

// controlStore returns the store as a ControlStore.
func (e *Engine) controlStore() (ControlStore, error) {
	cs, ok := e.store.(ControlStore)
	if !ok {
		return nil, fmt.Errorf("%w: the store of table %s keeps no pause or run-now", lockerr.UnsafeStore, e.store.Table())
	}
	return cs, nil
}

// controlled checks name against the name column, as an acquisition would,
// then runs op on the ControlStore: what an operator writes must land in the
// row the job's acquisitions read.
func controlled[T any](e *Engine, ctx context.Context, what, name string, op func(context.Context, ControlStore) (T, error)) (T, error) {
	var zero T
	cs, err := e.controlStore()
	if err != nil {
		return zero, err
	}
	if _, err := e.NameKey(ctx, name); err != nil {
		return zero, err
	}
	v, err := bounded(ctx, func(ctx context.Context) (T, error) { return op(ctx, cs) })
	if err != nil {
		return zero, fmt.Errorf("shedlock: %s %q in table %s: %w", what, name, e.store.Table(), err)
	}
	return v, nil
}

// Pause pauses name until until, or until Resume when until is zero; an
// until that has passed is an error.
func (e *Engine) Pause(ctx context.Context, name string, until time.Time) error {
	var ms int64
	if !until.IsZero() {
		if !until.After(time.Now()) {
			return fmt.Errorf("%w: pause %q until %s: that time has passed", lockerr.InvalidConfig, name,
				until.UTC().Format(time.RFC3339Nano))
		}
		ms = max(until.UnixMilli(), 1) // 0 means until resumed
	}
	_, err := controlled(e, ctx, "pause", name, func(ctx context.Context, cs ControlStore) (bool, error) {
		return true, cs.Pause(ctx, name, ms)
	})
	return err
}

// Resume ends name's pause; a name that is not paused is no error.
func (e *Engine) Resume(ctx context.Context, name string) error {
	_, err := controlled(e, ctx, "resume", name, func(ctx context.Context, cs ControlStore) (bool, error) {
		return true, cs.Resume(ctx, name)
	})
	return err
}

// RunNow asks for one more run of name and returns how many are pending.
func (e *Engine) RunNow(ctx context.Context, name string) (int64, error) {
	return controlled(e, ctx, "request a run of", name, func(ctx context.Context, cs ControlStore) (int64, error) {
		return cs.RunNow(ctx, name)
	})
}

// RunRequests returns, for those of names with pending run requests, how
// many, with one statement.
func (e *Engine) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	cs, err := e.controlStore()
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return map[string]int64{}, nil
	}
	got, err := statement(e, ctx, func(ctx context.Context) (map[string]int64, error) { return cs.RunRequests(ctx, names) })
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the run requests of %d locks in table %s: %w", len(names), e.store.Table(), err)
	}
	return got, nil
}

// RunDone counts one run of name done, if one is pending, while l, a lock on
// name of any SQL provider, still holds it, and l has marked none yet (a
// RunDone sent again); lockerr.LockLost when l no longer holds it. A lock of
// another table holds no row of this one: lost.
func (e *Engine) RunDone(ctx context.Context, name string, l *Lock) error {
	switch {
	case l == nil:
		return fmt.Errorf("%w: run done for %q: no lock", lockerr.InvalidConfig, name)
	case l.name != name:
		return fmt.Errorf("%w: run done for %q: the lock given is %q's", lockerr.InvalidConfig, name, l.name)
	}
	cs, err := e.controlStore()
	if err != nil {
		return err
	}
	if err := l.take(ctx); err != nil {
		return err
	}
	defer l.give()
	if l.done != nil {
		return fmt.Errorf("%w: run done for %q: %w", lockerr.LockLost, name, l.done)
	}
	held, err := statement(e, ctx, func(ctx context.Context) (bool, error) { return cs.RunDone(ctx, l.args) })
	if err != nil {
		return fmt.Errorf("shedlock: mark a run of %q done in table %s: %w", name, e.store.Table(), err)
	}
	if !held {
		return fmt.Errorf("%w: run done for %q: the lock expired or was taken, so the run is not counted", lockerr.LockLost, name)
	}
	return nil
}

// ControlRowOwner is what Pause and RunNow write to locked_by when they make
// the row of a name that has none: the row is free, and no acquisition's
// token can equal it.
const ControlRowOwner = "(control)"

// BatchMembers returns a lookup of the members of a batch by the name a
// statement returned: the member of exactly that name, else the one member
// whose name differs from it in case alone (the row's stored spelling, which
// a case-insensitive collation makes the member's). A name it cannot tell is
// not found: the member's outcome is then ErrNotAcquired rather than
// ErrPaused, not taken either way.
func BatchMembers(as []BatchArgs) func(name string) (int, bool) {
	exact := make(map[string]int, len(as))
	for i, a := range as {
		exact[a.Name] = i
	}
	return func(name string) (int, bool) {
		if i, ok := exact[name]; ok {
			return i, true
		}
		found := -1
		for i, a := range as {
			if strings.EqualFold(a.Name, name) {
				if found >= 0 {
					return 0, false
				}
				found = i
			}
		}
		return found, found >= 0
	}
}

// NameCounts reads the (name, count) rows of a run-requests query, as each
// dialect's RunRequests returns them: rows and err as the query gave them.
func NameCounts(rows *sql.Rows, err error) (map[string]int64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		out[name] = n
	}
	return out, rows.Err()
}
