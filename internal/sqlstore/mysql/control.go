package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Pause and run-now, on a table with the control columns (migration 0004,
// sqlstore.ControlColumns). Times are milliseconds since 1970 by the
// server's clock: BIGINT, not TIMESTAMP, which ends in 2038.
const (
	nowMillis = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(3)) DIV 1000)"
	// pausedSQL: the row is paused now. Unqualified, it reads the row a
	// statement changes (or, joined with a batch's rows, the table's).
	pausedSQL = "(paused_at IS NOT NULL AND (paused_until IS NULL OR paused_until > " + nowMillis + "))"
	// pausedMark is what an acquiring statement that found the row paused
	// returns as its LAST_INSERT_ID, which the server sends with the count of
	// rows: no round trip more. No fencing token, which counts microseconds
	// since 1970, is 1.
	pausedMark = 1
	// pauseMarkSQL, an assignment put first in an acquisition's ON DUPLICATE
	// KEY UPDATE, sets that mark on a paused row and leaves paused_at as it is
	// (the inner IF cannot be folded away: its value is LAST_INSERT_ID's).
	pauseMarkSQL = "paused_at = IF(" + pausedSQL + ", IF(LAST_INSERT_ID(1), paused_at, NULL), paused_at), "
	// freeSQL is the condition on which an acquisition takes an existing row;
	// with the control columns, an unpaused one.
	freeSQL = "lock_until <= UTC_TIMESTAMP(3)"

	// Pause and RunNow make a free row for a name that has none, so that the
	// first acquisition finds the pause, or the executor the request.
	pauseSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, paused_at, paused_until) " +
		"VALUES (?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?, " + nowMillis + ", ?) " +
		"ON DUPLICATE KEY UPDATE paused_at = " + nowMillis + ", paused_until = ?"
	resumeSQL = "UPDATE {t} SET paused_at = NULL, paused_until = NULL WHERE name = ?"
	runNowSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, runs_requested) " +
		"VALUES (?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?, 1) " +
		"ON DUPLICATE KEY UPDATE runs_requested = COALESCE(runs_requested, 0) + 1"
	pendingSQL  = "SELECT " + pendingExpr + " FROM {t} WHERE name = ?"
	pendingExpr = "GREATEST(COALESCE(runs_requested, 0) - COALESCE(runs_done, 0), 0)"
	hasPending  = "COALESCE(runs_requested, 0) > COALESCE(runs_done, 0)"
	// The pending requests of many names, read from one JSON parameter as a
	// batch reads its rows, returned under the names as sent; prepared on
	// first use, since an executor asks every few seconds.
	runRequestsSQL = "SELECT b.n, " + pendingExpr + " FROM JSON_TABLE(?, '$[*]' COLUMNS (" +
		"n VARCHAR(512) CHARACTER SET utf8mb4 PATH '$')) AS b " +
		"JOIN {t} AS l ON l.name = CONVERT(b.n USING {charset}) COLLATE {collation} WHERE " + hasPending
	// The same, one name per UNION ALL branch, on a server without JSON_TABLE.
	runRequestOneSQL = "SELECT CAST(? AS CHAR CHARACTER SET utf8mb4), " + pendingExpr + " FROM {t} WHERE name = ? AND " + hasPending
	// RunDone counts a run done only while the token holds the unexpired
	// lock, only while one is pending, and only once per token: the token
	// that marked it stays in runs_done_by. Its arguments are the token, the
	// name, the token and the token.
	runDoneSQL = "UPDATE {t} SET runs_done = COALESCE(runs_done, 0) + 1, runs_done_by = ? " +
		"WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3) AND COALESCE(runs_done, 0) < COALESCE(runs_requested, 0) " +
		"AND (runs_done_by IS NULL OR runs_done_by <> ?)"
	// The lock list's control columns (see sqlstore.Caps.ScanRows).
	locksControlSQL = ", " + pausedSQL + ", paused_until, " + pendingExpr

	// CatchUp's acquisition on a table with the control columns: the row is
	// matched when it is paused too, and then left as it is, with the mark
	// (see pauseMarkSQL). A matched row is paused or free, so that each
	// assignment tests the pause alone; each sees the new values of those
	// before it, and none changes what the pause reads.
	controlFireAcquireSQL = "UPDATE {t} SET " + pauseMarkSQL + "{fence}" +
		"locked_by = IF(" + pausedSQL + ", locked_by, ?), locked_at = IF(" + pausedSQL + ", locked_at, UTC_TIMESTAMP(3)), " +
		"lock_until = IF(" + pausedSQL + ", lock_until, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3))) " +
		"WHERE name = ? AND (" + pausedSQL + " OR (lock_until <= UTC_TIMESTAMP(3) AND (last_success IS NULL OR last_success < ?)))"
	controlFireFenceSQL = "fence = IF(" + pausedSQL + ", fence, LAST_INSERT_ID(GREATEST(COALESCE(fence, 0) + 1, " + nowMicros + "))), "
)

// controlReplacer fills an acquisition's {free} and {pauseMark}: with
// control, a paused row is not taken and is marked; without, the statement
// is the one of a table before migration 0004.
func controlReplacer(control bool) *strings.Replacer {
	if !control {
		return strings.NewReplacer("{free}", freeSQL, "{pauseMark}", "")
	}
	return strings.NewReplacer("{free}", freeSQL+" AND NOT "+pausedSQL, "{pauseMark}", pauseMarkSQL)
}

// locksText is the lock list query, ended by tail, with the control columns
// where the table has them.
func locksText(control bool, tail string) string {
	cols := ""
	if control {
		cols = locksControlSQL
	}
	return strings.ReplaceAll(locksSQL, "{control}", cols) + tail
}

// controlPrepared is what the first RunRequests prepares.
type controlPrepared struct {
	*prepared
	requests *sql.Stmt // nil on a server without JSON_TABLE
}

var _ sqlstore.ControlStore = (*Store)(nil)

// controlled returns the first use's statements, or the error that names the
// migration when the table has no control columns.
func (s *Store) controlled(ctx context.Context) (*prepared, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !p.control {
		return nil, sqlstore.NoControl(s.tableName, "mysql", p.missingControl)
	}
	return p, nil
}

// prepareControl prepares runRequestsSQL on the first RunRequests.
func (s *Store) prepareControl(ctx context.Context) (*controlPrepared, error) {
	p, err := s.controlled(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.db.PrepareContext(ctx, p.runRequests)
	switch {
	case err != nil && errorNumber(err) == errParse:
		return &controlPrepared{prepared: p}, nil
	case err != nil:
		return nil, fmt.Errorf("shedlock: prepare statements on %s: %w", s.table, err)
	}
	return &controlPrepared{prepared: p, requests: st}, nil
}

// Pause pauses name until until (0: until resumed), making its row if needed.
func (s *Store) Pause(ctx context.Context, name string, until int64) error {
	p, err := s.controlled(ctx)
	if err != nil {
		return err
	}
	end := sql.NullInt64{Int64: until, Valid: until != 0}
	_, err = s.db.ExecContext(ctx, p.sqlOf(pauseSQL), name, sqlstore.ControlRowOwner, end, end)
	return nodeError(err)
}

// Resume ends name's pause.
func (s *Store) Resume(ctx context.Context, name string) error {
	p, err := s.controlled(ctx)
	if err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, p.sqlOf(resumeSQL), name)
	return nodeError(err)
}

// RunNow counts one more run requested, then reads how many are pending: two
// statements, since MySQL's upsert returns no row.
func (s *Store) RunNow(ctx context.Context, name string) (int64, error) {
	p, err := s.controlled(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := s.db.ExecContext(ctx, p.sqlOf(runNowSQL), name, sqlstore.ControlRowOwner); err != nil {
		return 0, nodeError(err)
	}
	var pending int64
	if err := s.db.QueryRowContext(ctx, p.sqlOf(pendingSQL), name).Scan(&pending); err != nil {
		return 0, err
	}
	return pending, nil
}

// RunRequests reads the pending requests of names with one statement.
func (s *Store) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !p.control {
		return map[string]int64{}, nil // no column, no request
	}
	cp, err := s.control.Get(ctx)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if cp.requests != nil {
		var doc []byte
		if doc, err = json.Marshal(names); err != nil {
			return nil, err
		}
		rows, err = cp.requests.QueryContext(ctx, string(doc))
	} else {
		branches, args := make([]string, len(names)), make([]any, 0, 2*len(names))
		for i, n := range names {
			branches[i], args = runRequestOneSQL, append(args, n, n)
		}
		rows, err = s.db.QueryContext(ctx, p.sqlOf(strings.Join(branches, " UNION ALL ")), args...)
	}
	return sqlstore.NameCounts(rows, err)
}

// RunDone counts one run done while a's token holds the unexpired lock. An
// UPDATE that matched no row reports 0, and so does one that found nothing
// pending, or this token's mark: the rare second statement tells which.
func (s *Store) RunDone(ctx context.Context, a sqlstore.Args) (bool, error) {
	p, err := s.controlled(ctx)
	if err != nil {
		return false, err
	}
	changed, err := sqlstore.Changed(s.db.ExecContext(ctx, p.sqlOf(runDoneSQL), a.Token, a.Name, a.Token, a.Token))
	if err != nil || changed {
		return changed, nodeError(err)
	}
	return s.found(ctx, true, a)
}

// closeControl closes what prepareControl prepared.
func closeControl(cp *controlPrepared) error {
	if cp.requests == nil {
		return nil
	}
	return cp.requests.Close()
}

// pausedGrant reports whether an acquisition's result carries the paused
// mark; only a table with the control columns can.
func pausedGrant(p *prepared, res sql.Result) (bool, error) {
	if !p.control {
		return false, nil
	}
	id, err := res.LastInsertId()
	if err != nil {
		return false, errors.Join(errors.New("read the acquisition's LAST_INSERT_ID"), err)
	}
	return id == pausedMark, nil
}
