package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// batchText is batchSQL with or without the fence column.
func batchText(fence bool) string {
	pairs := []string{"{fenceCol}", batchFenceCol, "{fenceNew}", batchFenceNew, "{fenceSet}", batchFenceSet, "{fenceRet}", batchFenceRet}
	if !fence {
		for i := 1; i < len(pairs); i += 2 {
			pairs[i] = ""
		}
	}
	return strings.NewReplacer(pairs...).Replace(batchSQL)
}

// AcquireBatch takes the rows of as with one statement (batchSQL), whatever
// their number. The rows it took come back with their tokens, which tell each
// attempt's outcome. SQLite before 3.35 cannot run it: sqlstore.ErrNoBatch.
func (s *Store) AcquireBatch(ctx context.Context, as []sqlstore.BatchArgs) ([]sqlstore.Grant, error) {
	p, err := s.setup.Get(ctx)
	if err != nil {
		return nil, err
	}
	if !p.batch {
		return nil, sqlstore.ErrNoBatch
	}
	rows := make([][3]any, len(as))
	byToken := make(map[string]int, len(as))
	for i, a := range as {
		rows[i] = [3]any{a.Name, a.Token, a.MostFor.Milliseconds()}
		byToken[a.Token] = i
	}
	doc, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	args := []any{string(doc)}
	if p.fence {
		args = append(args, hostMicros())
	}
	res, err := p.stmts[stmtBatch].QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	grants := make([]sqlstore.Grant, len(as))
	member := sqlstore.BatchMembers(as)
	for res.Next() {
		var by, name string
		var fence int64
		var paused bool
		dest := []any{&by}
		if p.fence {
			dest = append(dest, &fence)
		}
		if p.control != nil {
			dest = append(dest, &paused, &name)
		}
		if err := res.Scan(dest...); err != nil {
			return nil, err
		}
		if paused { // left as it was, held by whoever held it
			if i, ok := member(name); ok {
				grants[i].Paused = true
			}
			continue
		}
		i, ok := byToken[by]
		if !ok {
			return nil, fmt.Errorf("shedlock: the batch statement on %s returned a row held by %q, not by this batch", s.tableName, by)
		}
		grants[i] = sqlstore.Grant{OK: true, Fence: fence}
	}
	return grants, res.Err()
}

// NameKeys are the names themselves, as NameKey's: no statement.
func (s *Store) NameKeys(ctx context.Context, names []string) ([]string, []error, error) {
	if _, err := s.setup.Get(ctx); err != nil {
		return nil, nil, err
	}
	return names, make([]error, len(names)), nil
}

// BusyRows is nil: SQLite locks the database, not rows, and a batch waits
// for another writer as a single attempt does (busy_timeout).
func (s *Store) BusyRows(context.Context, []sqlstore.BatchArgs) ([]bool, error) { return nil, nil }
