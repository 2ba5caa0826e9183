package mysql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// A batch (TryLockBatch) is two statements whatever its size: the upsert of
// every row, then a read of which rows now carry this batch's tokens; on
// MariaDB one, the upsert returning every row as it left it (RETURNING,
// MariaDB 10.5). Each
// reads the rows from one JSON parameter, an array of [name, token,
// microseconds], with JSON_TABLE (MariaDB 10.6, MySQL 8.0.4), so that its text
// is the same for every batch size and it is prepared once, on the first
// batch: go-sql-driver sends a prepared statement in one round trip, and an
// unprepared one with arguments in two.
const (
	batchRows = "JSON_TABLE(?, '$[*]' COLUMNS (i FOR ORDINALITY, " +
		"n VARCHAR(512) CHARACTER SET utf8mb4 PATH '$[0]', t VARCHAR(512) CHARACTER SET utf8mb4 PATH '$[1]', " +
		"u BIGINT PATH '$[2]')) AS b"
	// The upsert takes each row on acquireSQL's condition, column by column,
	// with fencedAcquireSQL's token (the fence first, lock_until last: each
	// assignment sees the new values of those before it). Rows are inserted,
	// and their locks taken, in the order of the array, which is by name:
	// the one order of every instance, so that two batches do not wait on
	// each other in a cycle. Its count of rows cannot tell which rows it took.
	batchAcquireSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by{fenceCol}) " +
		"SELECT b.n, TIMESTAMPADD(MICROSECOND, b.u, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), b.t{fenceNew} " +
		"FROM " + batchRows + " ORDER BY b.i " +
		"ON DUPLICATE KEY UPDATE {fenceSet}locked_by = IF(lock_until <= UTC_TIMESTAMP(3), b.t, locked_by), " +
		"locked_at = IF(lock_until <= UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), locked_at), " +
		"lock_until = IF(lock_until <= UTC_TIMESTAMP(3), TIMESTAMPADD(MICROSECOND, b.u, UTC_TIMESTAMP(3)), lock_until)"
	batchFenceNew = ", " + nowMicros
	batchFenceSet = "fence = IF(lock_until <= UTC_TIMESTAMP(3), GREATEST(COALESCE(fence, 0) + 1, " + nowMicros + "), fence), "
	// The read: a row whose locked_by is a token of this batch was taken by
	// it (tokens are unique), and its fence is that acquisition's. The name is
	// converted to the column's character set and collation, so that the
	// primary key finds it.
	batchOwnedSQL = "SELECT l.locked_by{fenceRet} FROM " + batchRows +
		" JOIN {t} AS l ON l.name = CONVERT(b.n USING {charset}) COLLATE {collation}"
	// Which rows of a batch exist (a consistent read, which waits for no
	// lock), and which of those no other transaction holds (SKIP LOCKED, on
	// MariaDB 10.6 and MySQL 8.0, as JSON_TABLE): asked after the upsert
	// waited out its lock wait on a row, to tell which.
	batchExistSQL = "SELECT b.i FROM " + batchRows + " JOIN {t} AS l ON l.name = CONVERT(b.n USING {charset}) COLLATE {collation}"
	batchFreeSQL  = batchExistSQL + " FOR UPDATE SKIP LOCKED"
	// The upsert's wait for a row another transaction holds, in seconds
	// (whole, as InnoDB counts them), in place of the session's (50 by
	// default): long enough for the statements of other instances, which
	// hold a row for a statement's time, short enough that a row an open
	// transaction holds (an operator's SELECT ... FOR UPDATE) fails its
	// member alone, well within the acquire timeout. MariaDB sets it for the
	// statement (SET STATEMENT); see withLockWait for MySQL.
	batchLockWait = "1"
	// The new names' checks (see tableInfo.nameCheck), one row each, with the
	// name as JSON_TABLE read it, to be compared with the one sent.
	batchNamesSQL = "SELECT CAST(b.n AS BINARY), {check} FROM JSON_TABLE(?, '$[*]' COLUMNS (i FOR ORDINALITY, " +
		"n VARCHAR(512) CHARACTER SET utf8mb4 PATH '$')) AS b ORDER BY b.i"
)

// Indexes of the batch statements.
const (
	batchAcquire = iota
	batchOwned
	batchNames
	batchExist
	batchFree
)

// batchTexts returns the batch statements on tbl, the zone pinned by sqlOf;
// on MariaDB (returning) the upsert returns each row's locked_by (and fence).
func batchTexts(tbl *tableInfo, sqlOf func(string) string, returning bool) []string {
	pairs := []string{"{fenceCol}", "", "{fenceNew}", "", "{fenceSet}", "", "{fenceRet}", "",
		"{charset}", tbl.name.charset, "{collation}", tbl.name.collation, "{check}", tbl.nameCheckOf("b.n")}
	if tbl.fence {
		pairs[1], pairs[3], pairs[5], pairs[7] = ", fence", batchFenceNew, batchFenceSet, ", l.fence"
	}
	r := strings.NewReplacer(pairs...)
	acquire := r.Replace(batchAcquireSQL)
	if returning {
		acquire += " RETURNING locked_by"
		if tbl.fence {
			acquire += ", fence"
		}
	}
	return []string{withLockWait(sqlOf(acquire), returning), sqlOf(r.Replace(batchOwnedSQL)), sqlOf(r.Replace(batchNamesSQL)),
		sqlOf(r.Replace(batchExistSQL)), sqlOf(r.Replace(batchFreeSQL))}
}

// withLockWait sets batchLockWait for stmt on MariaDB, in the SET STATEMENT
// that pins its time zone: a second SET STATEMENT around it would not be read
// as pinning the zone. MySQL's statement is left as it is: whether its hint
// may set the lock wait beside the zone's is not tested here, and a hint
// comment it could not read would lose the zone; its upsert waits for the
// session's innodb_lock_wait_timeout.
func withLockWait(stmt string, mariadb bool) string {
	if !mariadb {
		return stmt
	}
	set := "innodb_lock_wait_timeout = " + batchLockWait
	if rest, ok := strings.CutPrefix(stmt, "SET STATEMENT "); ok {
		return "SET STATEMENT " + set + ", " + rest
	}
	return "SET STATEMENT " + set + " FOR " + stmt
}

// errParse is the server's syntax error: a server without JSON_TABLE.
const errParse = 1064

// batchPrepared is what the first batch prepares, on what the first use
// found.
type batchPrepared struct {
	*prepared                   // its returning: the upsert returns the rows
	stmts     sqlstore.Prepared // by batchAcquire, batchOwned, batchNames; nil without JSON_TABLE
}

// prepareBatch prepares the batch statements, on the first batch rather than
// the first use, so that a provider that never batches keeps three statements
// on the server; or none on a server without JSON_TABLE, which then takes a
// batch's locks one by one.
func (s *Store) prepareBatch(ctx context.Context) (*batchPrepared, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	stmts, err := sqlstore.Prepare(ctx, s.db, s.table, p.batchTexts[:batchExist]...) // BusyRows's are rare: not kept
	switch {
	case err != nil && errorNumber(err) == errParse:
		return &batchPrepared{prepared: p}, nil
	case err != nil:
		return nil, err
	}
	return &batchPrepared{prepared: p, stmts: stmts}, nil
}

// batchOf returns the batch statements, and the JSON document of as that
// each takes: a row of name, token and LockAtMostFor in microseconds each.
func (s *Store) batchOf(ctx context.Context, as []sqlstore.BatchArgs) (*batchPrepared, string, error) {
	bp, err := s.batch.Get(ctx)
	if err != nil {
		return nil, "", err
	}
	if bp.stmts == nil {
		return nil, "", sqlstore.ErrNoBatch
	}
	rows := make([][3]any, len(as))
	for i, a := range as {
		rows[i] = [3]any{a.Name, a.Token, a.MostFor.Microseconds()}
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, "", err
	}
	return bp, string(doc), nil
}

// AcquireBatch takes the rows of as with the upsert, then reads which it
// took: two round trips, or one on MariaDB, whose upsert returns the rows. A
// conflict that rolled the upsert back is sqlstore.ErrConflict (see
// batchError). When the upsert ran but which rows it took cannot be read,
// the error is sqlstore.ErrUnread, and the engine releases the batch's
// tokens.
func (s *Store) AcquireBatch(ctx context.Context, as []sqlstore.BatchArgs) ([]sqlstore.Grant, error) {
	bp, doc, err := s.batchOf(ctx, as)
	if err != nil {
		return nil, err
	}
	byToken := make(map[string]int, len(as))
	for i, a := range as {
		byToken[a.Token] = i
	}
	var res *sql.Rows
	if bp.returning {
		res, err = bp.stmts[batchAcquire].QueryContext(ctx, doc)
	} else if _, err = bp.stmts[batchAcquire].ExecContext(ctx, doc); err == nil {
		res, err = bp.stmts[batchOwned].QueryContext(ctx, doc)
		if err != nil {
			return nil, fmt.Errorf("%w: read which locks the batch took: %w", sqlstore.ErrUnread, err)
		}
	}
	if err != nil {
		return nil, batchError(err)
	}
	defer res.Close()
	grants := make([]sqlstore.Grant, len(as))
	for res.Next() {
		// A row of a hand-made table may hold NULLs: it carries no token of
		// this batch, so it was not taken, as TryLock's upsert leaves it.
		var by sql.NullString
		var fence sql.NullInt64
		dest := []any{&by}
		if bp.fence {
			dest = append(dest, &fence)
		}
		if err := res.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%w: %w", sqlstore.ErrUnread, err)
		}
		if i, ours := byToken[by.String]; ours && by.Valid {
			grants[i] = sqlstore.Grant{OK: true, Fence: fence.Int64}
		}
	}
	if err := res.Err(); err != nil {
		if conflictOrError(err) == nil { // MariaDB reports a conflict while the rows come: rolled back
			return nil, batchError(err)
		}
		return nil, fmt.Errorf("%w: %w", sqlstore.ErrUnread, nodeError(err))
	}
	return grants, nil
}

// batchError says what the batch upsert's error means: a lock wait that ran
// out (sqlstore.ErrLockWait) or another conflict (sqlstore.ErrConflict) rolled
// it back; else the store's error.
func batchError(err error) error {
	switch {
	case errorNumber(err) == errLockWaitTimeout:
		return fmt.Errorf("%w: %w", sqlstore.ErrLockWait, err)
	case conflictOrError(err) == nil:
		return fmt.Errorf("%w: %w", sqlstore.ErrConflict, err)
	}
	return nodeError(err)
}

// NameKeys checks the new names of a batch with one statement, as NameKey
// checks one.
func (s *Store) NameKeys(ctx context.Context, names []string) ([]string, []error, error) {
	bp, err := s.batch.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	keys, errs := make([]string, len(names)), make([]error, len(names))
	if bp.stmts == nil {
		for i, name := range names {
			if keys[i], err = s.NameKey(ctx, name); err != nil && !errors.Is(err, lockerr.InvalidConfig) {
				return nil, nil, err
			}
			errs[i] = err
		}
		return keys, errs, nil
	}
	doc, err := json.Marshal(names)
	if err != nil {
		return nil, nil, err
	}
	rows, err := bp.stmts[batchNames].QueryContext(ctx, string(doc))
	if err != nil {
		return nil, nil, fmt.Errorf("check the names against the name column: %w", err)
	}
	defer rows.Close()
	i := 0
	for ; rows.Next(); i++ {
		var read []byte
		var exact bool
		var weight sql.NullString
		if err := rows.Scan(&read, &exact, &weight); err != nil {
			return nil, nil, err
		}
		if i >= len(names) {
			break
		}
		keys[i], errs[i] = bp.nameKey(names[i], exact && string(read) == names[i], weight)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if i != len(names) {
		return nil, nil, fmt.Errorf("the name check returned %d rows for %d names", i, len(names))
	}
	return keys, errs, nil
}

// BusyRows tells which rows of as another transaction holds now: rows that
// exist but that SELECT ... FOR UPDATE SKIP LOCKED skips. Two statements,
// asked only after an upsert's lock wait ran out.
func (s *Store) BusyRows(ctx context.Context, as []sqlstore.BatchArgs) ([]bool, error) {
	bp, doc, err := s.batchOf(ctx, as)
	if err != nil {
		return nil, err
	}
	exist, err := s.ordinals(ctx, bp.batchTexts[batchExist], doc, len(as))
	if err != nil {
		return nil, fmt.Errorf("read which rows of the batch exist: %w", err)
	}
	free, err := s.ordinals(ctx, bp.batchTexts[batchFree], doc, len(as))
	if err != nil {
		return nil, fmt.Errorf("read which rows of the batch no other transaction holds: %w", err)
	}
	busy := make([]bool, len(as))
	for i := range busy {
		busy[i] = exist[i] && !free[i]
	}
	return busy, nil
}

// ordinals runs query, of batch rows' ordinals (from 1), and reports which of
// n came back.
func (s *Store) ordinals(ctx context.Context, query, doc string, n int) ([]bool, error) {
	rows, err := s.db.QueryContext(ctx, query, doc)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	got := make([]bool, n)
	for rows.Next() {
		var i int
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		if i >= 1 && i <= n {
			got[i-1] = true
		}
	}
	return got, rows.Err()
}
