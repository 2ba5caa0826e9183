package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// column is what information_schema says of one column of the lock table.
type column struct {
	name, dataType     string
	length             int // characters, for char and varchar
	charset, collation string
	precision          int // fractional digits, for timestamp and datetime
}

func (c column) String() string {
	switch c.dataType {
	case "char", "varchar":
		return fmt.Sprintf("%s %s(%d)", c.name, strings.ToUpper(c.dataType), c.length)
	case "timestamp", "datetime":
		if c.precision == 0 {
			return c.name + " " + strings.ToUpper(c.dataType)
		}
		return fmt.Sprintf("%s %s(%d)", c.name, strings.ToUpper(c.dataType), c.precision)
	}
	return c.name + " " + strings.ToUpper(c.dataType)
}

// tableInfo is the lock table as the first use finds it.
type tableInfo struct {
	display                   string // for messages
	name, lockUntil, lockedAt column
	lockedBy                  column
	padSpace                  bool // the name collation ignores trailing spaces
	fence                     bool // the fence column of migration 0002 is there
	lastSuccess               bool // the last_success column of migration 0003 is there
}

// splitTable splits "schema.table"; schema is nil (the connection's database)
// for a bare table name.
func splitTable(table string) (schema any, name string) {
	if s, t, ok := strings.Cut(table, "."); ok {
		return s, t
	}
	return nil, table
}

// inspectTable reads the lock table's columns and refuses a table that would
// break exclusion: lock times cut to the second, or columns of another kind.
func inspectTable(ctx context.Context, db *sql.DB, table string) (*tableInfo, error) {
	cols := sqlstore.Columns[column]{Table: table, Dir: "mysql", Kind: func(c column) string { return c.dataType }}
	schema, name := splitTable(table)
	if err := cols.ReadColumns(ctx, db, " in the connection's database", scanColumn, columnsQuery, schema, name); err != nil {
		return nil, err
	}
	t := &tableInfo{display: table}
	err := cols.Require([]sqlstore.Required[column]{
		{Dst: &t.name, Name: "name", Kinds: []string{"varchar", "char"}},
		{Dst: &t.lockUntil, Name: "lock_until", Kinds: []string{"timestamp", "datetime"}},
		{Dst: &t.lockedAt, Name: "locked_at", Kinds: []string{"timestamp", "datetime"}},
		{Dst: &t.lockedBy, Name: "locked_by", Kinds: []string{"varchar", "char"}},
	}, func(c column, kinds []string) error {
		return fmt.Errorf("%w: table %s: column %s is %s, want one of %s", lockerr.UnsafeStore, table,
			c.name, strings.ToUpper(c.dataType), strings.ToUpper(strings.Join(kinds, ", ")))
	})
	if err != nil {
		return nil, err
	}
	if t.fence, t.lastSuccess, err = cols.Later("bigint", "BIGINT"); err != nil {
		return nil, err
	}
	if err := t.checkKinds(); err != nil {
		return nil, err
	}
	err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT CONVERT('a' USING %[1]s) COLLATE %[2]s = CONVERT('a ' USING %[1]s) COLLATE %[2]s",
		t.name.charset, t.name.collation)).Scan(&t.padSpace)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the name column's collation: %w", err)
	}
	return t, nil
}

// scanColumn reads one row of columnsQuery.
func scanColumn(rows *sql.Rows) (string, column, error) {
	var c column
	var charset, collation sql.NullString // NULL, not '', under sql_mode EMPTY_STRING_IS_NULL
	err := rows.Scan(&c.name, &c.dataType, &c.length, &charset, &collation, &c.precision)
	c.charset, c.collation = charset.String, collation.String
	return c.name, c, err
}

// checkKinds refuses time columns that keep whole seconds, and text columns
// whose character set or collation cannot be named in SQL.
func (t *tableInfo) checkKinds() error {
	table := t.display
	for _, c := range []column{t.lockUntil, t.lockedAt} {
		if c.precision < 3 {
			return fmt.Errorf("%w: table %s: column %s keeps whole seconds, so every lock would end up to "+
				"a second early; keep milliseconds: ALTER TABLE %s MODIFY %s %s(3) NOT NULL",
				lockerr.UnsafeStore, table, c, table, c.name, strings.ToUpper(c.dataType))
		}
	}
	for _, c := range []column{t.name, t.lockedBy} {
		if !sqlstore.IsIdentifier(c.charset) || !sqlstore.IsIdentifier(c.collation) {
			return fmt.Errorf("%w: table %s: column %s has character set %q and collation %q, "+
				"which this provider cannot name in SQL", lockerr.UnsafeStore, table, c.name, c.charset, c.collation)
		}
	}
	return nil
}

// exactIn is a SQL test, taking the value twice, that col stores the value as
// sent: not cut to the column's length, not changed by its character set.
func exactIn(col column) string { return exactOf(col, "?") }

// exactOf is exactIn of the SQL value v.
func exactOf(col column, v string) string {
	return fmt.Sprintf("CAST(CONVERT(LEFT(CONVERT(%[3]s USING %[1]s), %[2]d) USING utf8mb4) AS BINARY) = CAST(%[3]s AS BINARY)",
		col.charset, col.length, v)
}

// nameCheck is a query, taking the name three times, for whether the name column
// stores the name exactly and for the collation's weight of it: two names of
// equal weight are one row. Under a PAD SPACE collation trailing spaces weigh
// nothing, which WEIGHT_STRING does not show, so they are trimmed first.
func (t *tableInfo) nameCheck() string { return "SELECT " + t.nameCheckOf("?") }

// nameCheckOf is nameCheck's select list for the SQL value v.
func (t *tableInfo) nameCheckOf(v string) string {
	value := v
	if t.padSpace {
		value = "TRIM(TRAILING ' ' FROM " + v + ")"
	}
	return fmt.Sprintf("%s, HEX(WEIGHT_STRING(CONVERT(%s USING %s) COLLATE %s))",
		exactOf(t.name, v), value, t.name.charset, t.name.collation)
}

// checkLockedBy refuses a locked_by column that cannot store this provider's
// tokens exactly: a cut or changed token could match another provider's.
func (t *tableInfo) checkLockedBy(ctx context.Context, db *sql.DB, lockedBy string) error {
	longest, err := sqlstore.TokenFits(t.display, t.lockedBy, lockedBy, t.lockedBy.length, "VARCHAR(255)")
	if err != nil {
		return err
	}
	var exact bool
	if err := db.QueryRowContext(ctx, "SELECT "+exactIn(t.lockedBy), longest, longest).Scan(&exact); err != nil {
		return fmt.Errorf("shedlock: check the owner against the locked_by column: %w", err)
	}
	if !exact {
		return fmt.Errorf("%w: table %s: column %s (character set %s) cannot store this provider's owner %q "+
			"exactly; give a WithLockedBy it can store", lockerr.UnsafeStore, t.display, t.lockedBy, t.lockedBy.charset, lockedBy)
	}
	return nil
}
