package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Prepared is a store's statements, prepared once on the *sql.DB. A nil entry is
// a statement left to the driver (see Exec).
type Prepared []*sql.Stmt

// Prepare prepares texts in order, closing those it prepared when one fails, so
// that a retry on the next call leaks nothing.
func Prepare(ctx context.Context, db *sql.DB, table string, texts ...string) (Prepared, error) {
	stmts := make(Prepared, len(texts))
	for i, text := range texts {
		st, err := db.PrepareContext(ctx, text)
		if err != nil {
			_ = stmts.Close()
			return nil, fmt.Errorf("shedlock: prepare statements on %s: %w", table, err)
		}
		stmts[i] = st
	}
	return stmts, nil
}

// Close closes every prepared statement.
func (p Prepared) Close() error {
	var errs []error
	for _, st := range p {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// Changed reports whether a statement's result changed a row.
func Changed(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
