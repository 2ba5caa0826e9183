package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"
)

// mysqlColumn is what information_schema says of one column of the lock table.
type mysqlColumn struct {
	name, dataType     string
	length             int // characters, for char and varchar
	charset, collation string
	precision          int // fractional digits, for timestamp and datetime
}

func (c mysqlColumn) String() string {
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

// mysqlTable is the lock table as the first use finds it.
type mysqlTable struct {
	display                   string // for messages
	name, lockUntil, lockedAt mysqlColumn
	lockedBy                  mysqlColumn
	padSpace                  bool // the name collation ignores trailing spaces
}

// inspectMySQLTable reads the lock table's columns and refuses a table that would
// break exclusion: lock times cut to the second, or columns of another kind.
func inspectMySQLTable(ctx context.Context, db *sql.DB, table string) (*mysqlTable, error) {
	var schema any // nil: the connection's database
	name := table
	if s, t, ok := strings.Cut(table, "."); ok {
		schema, name = s, t
	}
	rows, err := db.QueryContext(ctx, mysqlColumns, schema, name)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]mysqlColumn{}
	for rows.Next() {
		var c mysqlColumn
		if err := rows.Scan(&c.name, &c.dataType, &c.length, &c.charset, &c.collation, &c.precision); err != nil {
			return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
		}
		cols[c.name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%w: table %s does not exist in the connection's database: create it with "+
			"EnsureTable or the DDL of migrations/mysql", ErrUnsafeStore, table)
	}
	t := &mysqlTable{display: table}
	for _, c := range []struct {
		dst   *mysqlColumn
		name  string
		kinds []string
	}{
		{&t.name, "name", []string{"varchar", "char"}},
		{&t.lockUntil, "lock_until", []string{"timestamp", "datetime"}},
		{&t.lockedAt, "locked_at", []string{"timestamp", "datetime"}},
		{&t.lockedBy, "locked_by", []string{"varchar", "char"}},
	} {
		col, ok := cols[c.name]
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %s: create it with the DDL of migrations/mysql",
				ErrUnsafeStore, table, c.name)
		}
		if !contains(c.kinds, col.dataType) {
			return nil, fmt.Errorf("%w: table %s: column %s is %s, want one of %s", ErrUnsafeStore, table,
				c.name, strings.ToUpper(col.dataType), strings.ToUpper(strings.Join(c.kinds, ", ")))
		}
		*c.dst = col
	}
	for _, c := range []mysqlColumn{t.lockUntil, t.lockedAt} {
		if c.precision < 3 {
			return nil, fmt.Errorf("%w: table %s: column %s keeps whole seconds, so every lock would end up to "+
				"a second early; keep milliseconds: ALTER TABLE %s MODIFY %s %s(3) NOT NULL",
				ErrUnsafeStore, table, c, table, c.name, strings.ToUpper(c.dataType))
		}
	}
	for _, c := range []mysqlColumn{t.name, t.lockedBy} {
		if !isIdentifier(c.charset) || !isIdentifier(c.collation) {
			return nil, fmt.Errorf("%w: table %s: column %s has character set %q and collation %q, "+
				"which this provider cannot name in SQL", ErrUnsafeStore, table, c.name, c.charset, c.collation)
		}
	}
	err = db.QueryRowContext(ctx, fmt.Sprintf("SELECT CONVERT('a' USING %[1]s) COLLATE %[2]s = CONVERT('a ' USING %[1]s) COLLATE %[2]s",
		t.name.charset, t.name.collation)).Scan(&t.padSpace)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the name column's collation: %w", err)
	}
	return t, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// exactIn is a SQL test, taking the value twice, that col stores the value as
// sent: not cut to the column's length, not changed by its character set.
func exactIn(col mysqlColumn) string {
	return fmt.Sprintf("CAST(CONVERT(LEFT(CONVERT(? USING %s), %d) USING utf8mb4) AS BINARY) = CAST(? AS BINARY)",
		col.charset, col.length)
}

// nameCheck is a query, taking the name three times, for whether the name column
// stores the name exactly and for the collation's weight of it: two names of
// equal weight are one row. Under a PAD SPACE collation trailing spaces weigh
// nothing, which WEIGHT_STRING does not show, so they are trimmed first.
func (t *mysqlTable) nameCheck() string {
	value := "?"
	if t.padSpace {
		value = "TRIM(TRAILING ' ' FROM ?)"
	}
	return fmt.Sprintf("SELECT %s, HEX(WEIGHT_STRING(CONVERT(%s USING %s) COLLATE %s))",
		exactIn(t.name), value, t.name.charset, t.name.collation)
}

// checkLockedBy refuses a locked_by column that cannot store this provider's
// tokens exactly: a cut or changed token could match another provider's.
func (t *mysqlTable) checkLockedBy(ctx context.Context, db *sql.DB, lockedBy string) error {
	longest := lockedBy + ".18446744073709551615"
	if n := utf8.RuneCountInString(longest); n > t.lockedBy.length {
		return fmt.Errorf("%w: table %s: column %s is too short for this provider's owner %q (%d characters "+
			"with the acquisition number); widen it to VARCHAR(255) or give a shorter WithLockedBy",
			ErrUnsafeStore, t.display, t.lockedBy, lockedBy, n)
	}
	var exact bool
	if err := db.QueryRowContext(ctx, "SELECT "+exactIn(t.lockedBy), longest, longest).Scan(&exact); err != nil {
		return fmt.Errorf("shedlock: check the owner against the locked_by column: %w", err)
	}
	if !exact {
		return fmt.Errorf("%w: table %s: column %s (character set %s) cannot store this provider's owner %q "+
			"exactly; give a WithLockedBy it can store", ErrUnsafeStore, t.display, t.lockedBy, t.lockedBy.charset, lockedBy)
	}
	return nil
}
