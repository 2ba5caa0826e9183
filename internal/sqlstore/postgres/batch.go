package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// batchPrepared is what the first batch prepares, on what the first use found.
type batchPrepared struct {
	*prepared
	stmt sqlstore.Prepared // the batch statement, prepared where the store prepares (lib/pq)
}

// prepareBatch prepares the batch statement for lib/pq on the first batch,
// not on the first use, so that a provider that never batches prepares only
// its three statements.
func (s *Store) prepareBatch(ctx context.Context) (*batchPrepared, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	bp := &batchPrepared{prepared: p}
	if p.stmts != nil {
		if bp.stmt, err = sqlstore.Prepare(ctx, s.db, s.table, p.texts[pgBatch]); err != nil {
			return nil, err
		}
	}
	return bp, nil
}

// AcquireBatch takes the rows of as with one statement (batchSQL), one round
// trip with pgx in any mode and with lib/pq, which runs it prepared. Only the
// rows it took come back, each with its token: that is how each attempt's
// outcome is told, and a row with a token that is not this batch's, or of
// another table, is a statement run in the wrong session (see prove).
//
// A serialization failure or a deadlock rolls the whole statement back:
// sqlstore.ErrConflict; so does a wait for a row another transaction is
// inserting that outlasts the statement's lock_timeout: sqlstore.ErrLockWait. Two names that one row stands for under a
// nondeterministic collation make the statement change one row twice, which
// PostgreSQL refuses (cardinality_violation): lockerr.InvalidConfig.
func (s *Store) AcquireBatch(ctx context.Context, as []sqlstore.BatchArgs) ([]sqlstore.Grant, error) {
	bp, err := s.batch.Get(ctx)
	if err != nil {
		return nil, err
	}
	p := bp.prepared
	names, tokens, ms := make([]string, len(as)), make([]string, len(as)), make([]string, len(as))
	byToken := make(map[string]int, len(as))
	for i, a := range as {
		names[i], tokens[i], ms[i] = a.Name, a.Token, strconv.FormatInt(a.MostFor.Milliseconds(), 10)
		byToken[a.Token] = i
	}
	args := []any{textArray(names), textArray(tokens), "{" + strings.Join(ms, ",") + "}"}
	var rows *sql.Rows
	if bp.stmt != nil {
		rows, err = bp.stmt[0].QueryContext(ctx, args...)
	} else {
		rows, err = s.db.QueryContext(ctx, p.texts[pgBatch], args...)
	}
	if err != nil {
		return nil, batchError(err)
	}
	defer rows.Close()
	grants := make([]sqlstore.Grant, len(as))
	for rows.Next() {
		var oid int64
		var by string
		var fence int64
		var paused bool
		dest := []any{&oid, &by}
		if p.tbl.fence {
			dest = append(dest, &fence)
		}
		if p.tbl.control {
			dest = append(dest, &paused)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%w: %w", sqlstore.ErrUnread, err)
		}
		i, ours := byToken[by]
		if oid != p.oid || !ours {
			return nil, fmt.Errorf("%w: a batch statement on %s changed a row of table oid %d held by %q, not this "+
				"table (oid %d) and batch: the connection runs statements in another session than the one "+
				"that prepared them, as a pooler in transaction mode does", lockerr.UnsafeStore, s.table, oid, by, p.oid)
		}
		switch {
		case !paused:
			grants[i] = sqlstore.Grant{OK: true, Fence: fence}
		case !grants[i].OK: // a row taken and read paused was taken (see controlBatchSQL)
			grants[i].Paused = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, batchError(err)
	}
	return grants, nil
}

// batchError says what a batch statement's error means.
func batchError(err error) error {
	switch sqlState(err) {
	case "40001", "40P01": // serialization_failure, deadlock_detected
		return fmt.Errorf("%w: %w", sqlstore.ErrConflict, err)
	case "55P03": // lock_not_available: batchSQL's lock_timeout ran out on a row being inserted
		return fmt.Errorf("%w: %w", sqlstore.ErrLockWait, err)
	case "21000": // cardinality_violation: ON CONFLICT met one row twice
		return fmt.Errorf("%w: two names of the batch are one row under the name column's collation: %w",
			lockerr.InvalidConfig, err)
	}
	return readOnly(err)
}

// textArray is the text[] literal of ss: every element double-quoted, with
// its backslashes and double quotes escaped, so that no name is read as
// NULL, split at a comma or cut at a brace.
func textArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for _, r := range s {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// NameKeys checks each name against the name column. Under a deterministic
// collation, the default, that needs no statement; under a nondeterministic
// one, each new name's row is looked up as NameKey does, and one more
// statement finds the names of the batch that are one row (twinsSQL): the
// later one gets the first one's key.
func (s *Store) NameKeys(ctx context.Context, names []string) ([]string, []error, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, nil, err
	}
	keys, errs := make([]string, len(names)), make([]error, len(names))
	for i, name := range names {
		if errs[i] = p.tbl.checkName(name); errs[i] != nil {
			continue
		}
		if p.tbl.name.deterministic {
			keys[i] = name
			continue
		}
		if keys[i], err = s.NameKey(ctx, name); err != nil {
			return nil, nil, err
		}
	}
	if p.tbl.name.deterministic || len(names) < 2 {
		return keys, errs, nil
	}
	rows, err := s.db.QueryContext(ctx, strings.ReplaceAll(twinsSQL, "{collation}", p.tbl.name.qualifiedCollation), textArray(names))
	if err != nil {
		return nil, nil, fmt.Errorf("compare the batch's names under collation %s: %w", p.tbl.name.collation, err)
	}
	defer rows.Close()
	for rows.Next() {
		var i, first int
		if err := rows.Scan(&i, &first); err != nil {
			return nil, nil, err
		}
		if first < i && i <= len(names) && errs[i-1] == nil && errs[first-1] == nil {
			keys[i-1] = keys[first-1]
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	return keys, errs, nil
}

// BusyRows is nil: the batch statement skips the rows another transaction
// holds (SKIP LOCKED); it waits only for rows that do not exist yet, which no
// read could tell either, and the engine then makes the attempts one by one.
func (s *Store) BusyRows(context.Context, []sqlstore.BatchArgs) ([]bool, error) { return nil, nil }
