package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Pause and run-now, on a table with the control columns (migration 0004,
// sqlstore.ControlColumns). Times are milliseconds since 1970 by SQLite's
// clock, which reads 'now' once per statement.
const (
	nowText   = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
	nowMillis = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"

	// With the control columns, the acquiring UPDATE matches a paused row
	// too, and leaves it as it is: each assignment keeps the old value when
	// the row is paused (a matched row is paused or free, and every
	// assignment reads the old row), and RETURNING says which it was. SQLite
	// writes no page for a row whose new content equals the old, so a
	// refused attempt writes nothing, as a held row's does. The arguments
	// are updateSQL's and fencedUpdateSQL's, in their order; {fireCond} is
	// CatchUp's further condition.
	controlUpdateSQL = "UPDATE {t} SET lock_until = CASE WHEN {paused} THEN lock_until ELSE " +
		"strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0) END, " +
		"locked_at = CASE WHEN {paused} THEN locked_at ELSE " + nowText + " END, " +
		"locked_by = CASE WHEN {paused} THEN locked_by ELSE ? END{fenceSet} " +
		"WHERE name = ? AND ({paused} OR (lock_until <= " + nowText + "{fireCond})) RETURNING {fenceRet}{paused}"
	controlFenceSet = ", fence = CASE WHEN {paused} THEN fence ELSE max(coalesce(fence, 0) + 1, " + nowMicros + ", ?) END"
	// The batch upsert likewise: a paused row is matched and left as it is,
	// and returned with its name, marked paused.
	controlBatchSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by{fenceCol}) " +
		"SELECT json_extract(b.value, '$[0]'), strftime('%Y-%m-%d %H:%M:%f', julianday('now') + " +
		"json_extract(b.value, '$[2]') / 86400000.0), " + nowText + ", " +
		"json_extract(b.value, '$[1]'){fenceNew} FROM json_each(?1) AS b WHERE true ORDER BY 1 " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = CASE WHEN {pausedL} THEN l.lock_until ELSE excluded.lock_until END, " +
		"locked_at = CASE WHEN {pausedL} THEN l.locked_at ELSE excluded.locked_at END, " +
		"locked_by = CASE WHEN {pausedL} THEN l.locked_by ELSE excluded.locked_by END{batchFenceSet} " +
		"WHERE {pausedL} OR l.lock_until <= " + nowText + " RETURNING locked_by{batchFenceRet}, {paused}, name"
	controlBatchFenceSet = ", fence = CASE WHEN {pausedL} THEN l.fence ELSE max(coalesce(l.fence, 0) + 1, excluded.fence) END"

	// Pause and RunNow make a free row for a name that has none, so that the
	// first acquisition finds the pause, or the executor the request.
	pauseSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, paused_at, paused_until) " +
		"VALUES (?1, " + nowText + ", " + nowText + ", ?2, " + nowMillis + ", ?3) " +
		"ON CONFLICT (name) DO UPDATE SET paused_at = excluded.paused_at, paused_until = excluded.paused_until"
	resumeSQL = "UPDATE {t} SET paused_at = NULL, paused_until = NULL WHERE name = ?"
	runNowSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, runs_requested) " +
		"VALUES (?1, " + nowText + ", " + nowText + ", ?2, 1) " +
		"ON CONFLICT (name) DO UPDATE SET runs_requested = coalesce(runs_requested, 0) + 1 RETURNING " + pendingExpr
	pendingExpr = "max(coalesce(runs_requested, 0) - coalesce(runs_done, 0), 0)"
	// The pending requests of many names, from one JSON array, under the
	// names as sent.
	runRequestsSQL = "SELECT b.value, " + pendingExpr + " FROM json_each(?) AS b JOIN {t} AS l ON l.name = b.value " +
		"WHERE coalesce(l.runs_requested, 0) > coalesce(l.runs_done, 0)"
	// RunDone matches the token's unexpired lock, and counts a run only while
	// one is pending and only once per token, which it leaves in
	// runs_done_by: SQLite counts every row matched, so one row means held.
	// Every assignment reads the row as it was.
	runDoneSQL = "UPDATE {t} SET runs_done = coalesce(runs_done, 0) + CASE WHEN " + runDoneMark + " THEN 1 ELSE 0 END, " +
		"runs_done_by = CASE WHEN " + runDoneMark + " THEN ?2 ELSE runs_done_by END " +
		"WHERE name = ?1 AND locked_by = ?2 AND lock_until > " + nowText
	runDoneMark = "coalesce(runs_done, 0) < coalesce(runs_requested, 0) AND runs_done_by IS NOT ?2"
	// The lock list's control columns (see sqlstore.Caps.ScanRows).
	locksControlSQL = ", {paused}, paused_until, " + pendingExpr
)

// pausedOf is the test that the row is paused now, its columns prefixed by
// alias ("l.", or "" for the row a statement reads).
func pausedOf(alias string) string {
	return "(" + alias + "paused_at IS NOT NULL AND (" + alias + "paused_until IS NULL OR " +
		alias + "paused_until > " + nowMillis + "))"
}

// controlReplacer fills the control placeholders of a statement.
func controlReplacer() *strings.Replacer {
	return strings.NewReplacer("{paused}", pausedOf(""), "{pausedL}", pausedOf("l."))
}

// controlUpdateText is controlUpdateSQL with or without the fence column, and
// with fireCond.
func controlUpdateText(fence bool, fireCond string) string {
	set, ret := "", ""
	if fence {
		set, ret = controlFenceSet, "coalesce(fence, 0), "
	}
	text := strings.NewReplacer("{fenceSet}", set, "{fenceRet}", ret, "{fireCond}", fireCond).Replace(controlUpdateSQL)
	return controlReplacer().Replace(text)
}

// controlBatchText is controlBatchSQL with or without the fence column.
func controlBatchText(fence bool) string {
	pairs := []string{"{fenceCol}", batchFenceCol, "{fenceNew}", batchFenceNew,
		"{batchFenceSet}", controlBatchFenceSet, "{batchFenceRet}", ", coalesce(fence, 0)"}
	if !fence {
		for i := 1; i < len(pairs); i += 2 {
			pairs[i] = ""
		}
	}
	return controlReplacer().Replace(strings.NewReplacer(pairs...).Replace(controlBatchSQL))
}

// Indexes of the control statements in prepared.control.
const (
	ctlPause = iota
	ctlResume
	ctlRunNow
	ctlRunRequests
	ctlRunDone
)

// controlTexts are the control statements, prepared with the others on a
// table with the control columns.
func controlTexts() []string {
	return []string{pauseSQL, resumeSQL, runNowSQL, runRequestsSQL, runDoneSQL}
}

var _ sqlstore.ControlStore = (*Store)(nil)

// controlled returns the control statements, or the error that names the
// migration when the table has no control columns.
func (s *Store) controlled(ctx context.Context) (sqlstore.Prepared, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case len(p.missingControl) > 0:
		return nil, sqlstore.NoControl(s.tableName, "sqlite", p.missingControl)
	case p.control == nil:
		return nil, fmt.Errorf("%w: SQLite before 3.35 has no RETURNING, which pause and run-now need "+
			"(table %s has their columns)", lockerr.UnsafeStore, s.tableName)
	}
	return p.control, nil
}

// Pause pauses name until until (0: until resumed), making its row if needed.
func (s *Store) Pause(ctx context.Context, name string, until int64) error {
	st, err := s.controlled(ctx)
	if err != nil {
		return err
	}
	_, err = st[ctlPause].ExecContext(ctx, name, sqlstore.ControlRowOwner, sql.NullInt64{Int64: until, Valid: until != 0})
	return err
}

// Resume ends name's pause.
func (s *Store) Resume(ctx context.Context, name string) error {
	st, err := s.controlled(ctx)
	if err != nil {
		return err
	}
	_, err = st[ctlResume].ExecContext(ctx, name)
	return err
}

// RunNow counts one more run requested and returns how many are pending, in
// one statement.
func (s *Store) RunNow(ctx context.Context, name string) (int64, error) {
	st, err := s.controlled(ctx)
	if err != nil {
		return 0, err
	}
	var pending int64
	err = st[ctlRunNow].QueryRowContext(ctx, name, sqlstore.ControlRowOwner).Scan(&pending)
	return pending, err
}

// RunRequests reads the pending requests of names with one statement.
func (s *Store) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if p.control == nil {
		return map[string]int64{}, nil // no column, no request
	}
	doc, err := jsonText(names)
	if err != nil {
		return nil, err
	}
	rows, err := p.control[ctlRunRequests].QueryContext(ctx, doc)
	return sqlstore.NameCounts(rows, err)
}

// RunDone counts one run done while a's token holds the unexpired lock.
func (s *Store) RunDone(ctx context.Context, a sqlstore.Args) (bool, error) {
	st, err := s.controlled(ctx)
	if err != nil {
		return false, err
	}
	return sqlstore.Changed(st[ctlRunDone].ExecContext(ctx, a.Name, a.Token))
}

// locksText is the lock list query, ended by tail, with the control columns
// where the table has them.
func locksText(control bool, tail string) string {
	cols := ""
	if control {
		cols = controlReplacer().Replace(locksControlSQL)
	}
	return strings.ReplaceAll(locksSQL, "{control}", cols) + tail
}

// jsonText is v as a JSON text parameter.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
