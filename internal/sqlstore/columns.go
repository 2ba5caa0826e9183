package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// Columns is a lock table's columns as a dialect's catalog describes them
// (C), for the first-use checks every dialect makes alike; the checks of its
// own kinds stay the dialect's.
type Columns[C any] struct {
	Table  string       // as WithTableName gave it, for messages
	Dir    string       // the dialect's folder in migrations
	ByName map[string]C // by column name
	Kind   func(C) string
}

// ReadColumns reads the columns of cs.Table into cs.ByName: one row of query
// each, which scan reads into its name and C. A table with none does not
// exist: MissingTable's error, where saying where it was looked for.
func (cs *Columns[C]) ReadColumns(ctx context.Context, db *sql.DB, where string,
	scan func(*sql.Rows) (string, C, error), query string, args ...any) error {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("shedlock: read the columns of table %s: %w", cs.Table, err)
	}
	defer rows.Close()
	cs.ByName = map[string]C{}
	for rows.Next() {
		name, c, err := scan(rows)
		if err != nil {
			return fmt.Errorf("shedlock: read the columns of table %s: %w", cs.Table, err)
		}
		cs.ByName[name] = c
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("shedlock: read the columns of table %s: %w", cs.Table, err)
	}
	if len(cs.ByName) == 0 {
		return MissingTable(cs.Dir, cs.Table, where)
	}
	return nil
}

// Required is a column every lock table has: its name, the kinds the
// dialect's catalog may give it (any, when none), and where the first use
// keeps what the catalog says of it (nowhere, when nil).
type Required[C any] struct {
	Dst   *C
	Name  string
	Kinds []string
}

// Require finds each of want: a table without one is an error naming the DDL
// of the dialect's migrations; one of another kind, wrongKind's error.
func (cs *Columns[C]) Require(want []Required[C], wrongKind func(c C, kinds []string) error) error {
	for _, w := range want {
		col, ok := cs.ByName[w.Name]
		if !ok {
			return fmt.Errorf("%w: table %s has no column %s: create it with the DDL of migrations/%s",
				lockerr.UnsafeStore, cs.Table, w.Name, cs.Dir)
		}
		if w.Kinds != nil && !slices.Contains(w.Kinds, cs.Kind(col)) {
			return wrongKind(col, w.Kinds)
		}
		if w.Dst != nil {
			*w.Dst = col
		}
	}
	return nil
}

// laterColumns are the columns later migrations add, each a bigint.
var laterColumns = map[string]struct{ migration, holds string }{
	"fence":           {"0002", "fencing tokens are microseconds since 1970"},
	LastSuccessColumn: {"0003", "fire times are milliseconds since 1970"},
}

// Later reports whether the table has the columns later migrations add:
// fence (0002) and last_success (0003). One whose kind is not bigint, as the
// catalog names it, is an error naming its migration, with the type spelt as
// spelt says.
func (cs *Columns[C]) Later(bigint, spelt string) (fence, lastSuccess bool, err error) {
	if fence, err = cs.later("fence", bigint, spelt); err != nil {
		return false, false, err
	}
	lastSuccess, err = cs.later(LastSuccessColumn, bigint, spelt)
	return fence, lastSuccess, err
}

func (cs *Columns[C]) later(name, bigint, spelt string) (bool, error) {
	c, ok := cs.ByName[name]
	if !ok {
		return false, nil
	}
	if cs.Kind(c) != bigint {
		m := laterColumns[name]
		return false, fmt.Errorf("%w: table %s: column %v, want %s, as migration %s adds it: %s",
			lockerr.UnsafeStore, cs.Table, c, spelt, m.migration, m.holds)
	}
	return true, nil
}
