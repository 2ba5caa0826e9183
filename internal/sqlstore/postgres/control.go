package postgres

import (
	"context"
	"database/sql"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// Pause and run-now, on a table with the control columns (migration 0004,
// sqlstore.ControlColumns). Times are milliseconds since 1970 of the
// statement's instant, whatever the type of the time columns.
const (
	nowMillis = "floor(EXTRACT(EPOCH FROM statement_timestamp()) * 1000)::bigint"

	// With the control columns, an acquisition takes no paused row, and says
	// why it took none in the same statement: the upsert is a data-modifying
	// CTE, and when it returns no row, the statement returns the row as the
	// statement's snapshot has it if that row is paused, marked so (its last
	// column). The upsert reads the newest version of a row it meets, the
	// snapshot one from before the statement: a pause or resume committed
	// between them may name the wrong reason, never take a paused row. A
	// fence of a row Java inserted is NULL: the paused row's is 0.
	controlAcquireSQL = "WITH up AS (" + acquireSQL + ") SELECT *, false FROM up UNION ALL " +
		"SELECT tableoid::int8, locked_by::text{fenceZero}, true FROM {t} WHERE name = $1 AND {paused} " +
		"AND NOT EXISTS (SELECT 1 FROM up)"
	// The batch likewise: the rows it took, then those of its names that are
	// paused, with the token of the member each is, so that a member a row
	// was both taken by and read paused by (a resume in between) is taken.
	controlBatchSQL = batchWithSQL + ", up AS (" + batchInsertSQL + ") SELECT *, false FROM up UNION ALL " +
		"SELECT x.tableoid::int8, b.token{fenceZero}, true FROM {t} AS x JOIN b ON x.name = b.name WHERE {pausedX}"
	fenceZero = ", 0::int8"

	// Pause and RunNow make a free row for a name that has none, so that the
	// first acquisition finds the pause, or the executor the request.
	pauseSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by, paused_at, paused_until) " +
		"VALUES ($1, {now}, {now}, $2, " + nowMillis + ", $3::bigint) " +
		"ON CONFLICT (name) DO UPDATE SET paused_at = EXCLUDED.paused_at, paused_until = EXCLUDED.paused_until"
	resumeSQL = "UPDATE {t} SET paused_at = NULL, paused_until = NULL WHERE name = $1"
	runNowSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by, runs_requested) " +
		"VALUES ($1, {now}, {now}, $2, 1) " +
		"ON CONFLICT (name) DO UPDATE SET runs_requested = COALESCE(l.runs_requested, 0) + 1 RETURNING " + pendingExpr
	pendingExpr = "GREATEST(COALESCE(runs_requested, 0) - COALESCE(runs_done, 0), 0)"
	// The pending requests of many names, from one array literal, under the
	// names as sent.
	runRequestsSQL = "SELECT b.n, " + pendingExpr + " FROM unnest($1::text::text[]) AS b(n) " +
		"JOIN {t} AS l ON l.name = b.n WHERE COALESCE(l.runs_requested, 0) > COALESCE(l.runs_done, 0)"
	// RunDone matches the token's unexpired lock, and counts a run only while
	// one is pending and only once per token, which it leaves in
	// runs_done_by: PostgreSQL counts every row matched, so one row means
	// held. Every assignment reads the row as it was.
	runDoneSQL = "UPDATE {t} SET runs_done = COALESCE(runs_done, 0) + CASE WHEN " + runDoneMark + " THEN 1 ELSE 0 END, " +
		"runs_done_by = CASE WHEN " + runDoneMark + " THEN $2 ELSE runs_done_by END " +
		"WHERE name = $1 AND locked_by = $2 AND lock_until > {now}"
	runDoneMark = "COALESCE(runs_done, 0) < COALESCE(runs_requested, 0) AND runs_done_by IS DISTINCT FROM $2"
	// The lock list's control columns (see sqlstore.Caps.ScanRows).
	locksControlSQL = ", {paused}, paused_until, " + pendingExpr
)

// pausedOf is the test that the row is paused now, its columns prefixed by
// alias ("l.", or "" for the row a statement reads).
func pausedOf(alias string) string {
	return "(" + alias + "paused_at IS NOT NULL AND (" + alias + "paused_until IS NULL OR " +
		alias + "paused_until > " + nowMillis + "))"
}

// Indexes of the control statements in controlPrepared.
const (
	pgRunRequests = iota
	pgRunDone
)

// controlPrepared is what the first RunRequests or RunDone prepares for
// lib/pq (nothing for pgx, which caches statements itself).
type controlPrepared struct {
	*prepared
	texts [2]string
	stmts sqlstore.Prepared // nil unless the store prepares
}

var _ sqlstore.ControlStore = (*Store)(nil)

// controlled returns the first use's statements, or the error that names the
// migration when the table has no control columns.
func (s *Store) controlled(ctx context.Context) (*prepared, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !p.tbl.control {
		return nil, sqlstore.NoControl(s.Table(), "postgres", p.tbl.missingControl)
	}
	return p, nil
}

// prepareControl makes the executor's control statements, prepared for
// lib/pq.
func (s *Store) prepareControl(ctx context.Context) (*controlPrepared, error) {
	p, err := s.controlled(ctx)
	if err != nil {
		return nil, err
	}
	cp := &controlPrepared{prepared: p}
	for i, t := range [2]string{runRequestsSQL, runDoneSQL} {
		if cp.texts[i], err = s.sqlOf(ctx, t); err != nil {
			return nil, err
		}
	}
	if p.stmts != nil {
		if cp.stmts, err = sqlstore.Prepare(ctx, s.db, s.table, cp.texts[:]...); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// adminExec runs an operator's statement, named with sqlOf, on a table with
// the control columns.
func (s *Store) adminExec(ctx context.Context, stmt string, args ...any) (sql.Result, error) {
	if _, err := s.controlled(ctx); err != nil {
		return nil, err
	}
	q, err := s.sqlOf(ctx, stmt)
	if err != nil {
		return nil, err
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	return res, readOnly(err)
}

// Pause pauses name until until (0: until resumed), making its row if needed.
func (s *Store) Pause(ctx context.Context, name string, until int64) error {
	_, err := s.adminExec(ctx, pauseSQL, name, sqlstore.ControlRowOwner, sql.NullInt64{Int64: until, Valid: until != 0})
	return err
}

// Resume ends name's pause.
func (s *Store) Resume(ctx context.Context, name string) error {
	_, err := s.adminExec(ctx, resumeSQL, name)
	return err
}

// RunNow counts one more run requested and returns how many are pending, in
// one statement.
func (s *Store) RunNow(ctx context.Context, name string) (int64, error) {
	if _, err := s.controlled(ctx); err != nil {
		return 0, err
	}
	q, err := s.sqlOf(ctx, runNowSQL)
	if err != nil {
		return 0, err
	}
	var pending int64
	err = s.db.QueryRowContext(ctx, q, name, sqlstore.ControlRowOwner).Scan(&pending)
	return pending, readOnly(err)
}

// RunRequests reads the pending requests of names with one statement.
func (s *Store) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !p.tbl.control {
		return map[string]int64{}, nil // no column, no request
	}
	cp, err := s.control.Get(ctx)
	if err != nil {
		return nil, err
	}
	var rows *sql.Rows
	if cp.stmts != nil {
		rows, err = cp.stmts[pgRunRequests].QueryContext(ctx, textArray(names))
	} else {
		rows, err = s.db.QueryContext(ctx, cp.texts[pgRunRequests], textArray(names))
	}
	return sqlstore.NameCounts(rows, err)
}

// RunDone counts one run done while a's token holds the unexpired lock.
func (s *Store) RunDone(ctx context.Context, a sqlstore.Args) (bool, error) {
	cp, err := s.control.Get(ctx)
	if err != nil {
		return false, err
	}
	return s.serialized(ctx, func() (bool, error) {
		var res sql.Result
		var err error
		if cp.stmts != nil {
			res, err = cp.stmts[pgRunDone].ExecContext(ctx, a.Name, a.Token)
		} else {
			res, err = s.db.ExecContext(ctx, cp.texts[pgRunDone], a.Name, a.Token)
		}
		return sqlstore.Changed(res, readOnly(err))
	})
}

// closeControl closes what prepareControl prepared.
func closeControl(cp *controlPrepared) error { return cp.stmts.Close() }
