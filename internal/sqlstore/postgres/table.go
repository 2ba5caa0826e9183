package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/shedlock-go/shedlock/internal/lockerr"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// minVersion is the oldest server the first-use checks can read
// (pg_collation.collisdeterministic came in PostgreSQL 12).
const minVersion = 120000

// session is what the first use finds of the server and the session.
type session struct {
	version  int    // server_version_num
	encoding string // server_encoding
	readOnly bool   // transaction_read_only, as default_transaction_read_only sets it
	standby  bool   // pg_is_in_recovery()
}

// check refuses a server or session that cannot take locks.
func (s session) check() error {
	switch {
	case s.version < minVersion:
		return fmt.Errorf("%w: PostgreSQL server version %d is older than 12, the oldest this provider supports",
			lockerr.UnsafeStore, s.version)
	case s.standby:
		return fmt.Errorf("%w: the server is read-only, a hot standby in recovery: locks can only be taken on the "+
			"primary; connect to it (with pgx or lib/pq, target_session_attrs=read-write)", lockerr.UnsafeStore)
	case s.readOnly:
		return fmt.Errorf("%w: the session is read-only (transaction_read_only is on, as "+
			"default_transaction_read_only sets it for the role, the database or the connection): "+
			"locks can only be taken in a session that can write", lockerr.UnsafeStore)
	}
	return nil
}

// column is what pg_catalog says of one column of the lock table.
type column struct {
	name, typ     string // typ: pg_type.typname (varchar, bpchar, text, timestamp, timestamptz)
	typmod        int
	display       string // format_type, for messages
	deterministic bool   // the collation compares byte for byte
	collation     string
	// qualifiedCollation is the collation's name in SQL, schema-qualified and
	// quoted.
	qualifiedCollation string
}

func (c column) String() string { return c.name + " " + c.display }

// maxChars is how many characters a varchar or char column holds; 0 for no limit.
func (c column) maxChars() int {
	if (c.typ == "varchar" || c.typ == "bpchar") && c.typmod >= 4 {
		return c.typmod - 4
	}
	return 0
}

// holds is how many characters a text column holds, unlimited as the most.
func (c column) holds() int {
	if n := c.maxChars(); n > 0 {
		return n
	}
	return math.MaxInt
}

// precision is a timestamp column's fractional digits.
func (c column) precision() int {
	if c.typmod < 0 {
		return 6 // the default
	}
	return c.typmod
}

// tableInfo is the lock table as the first use finds it.
type tableInfo struct {
	display                   string // quoted, for messages and the ALTER fix
	encoding                  string // the server's: what the name column can store
	name, lockUntil, lockedAt column
	lockedBy                  column
	fence                     bool // the fence column of migration 0002 is there
	lastSuccess               bool // the last_success column of migration 0003 is there
	control                   bool // the columns of migration 0004 are there
	missingControl            []string
}

// instant reports whether the time columns are timestamptz rather than
// Java ShedLock's timestamp (without time zone) holding UTC.
func (t *tableInfo) instant() bool { return t.lockUntil.typ == "timestamptz" }

// millis reports whether a time column keeps fewer than microseconds.
func (t *tableInfo) millis() bool {
	return t.lockUntil.precision() < 6 || t.lockedAt.precision() < 6
}

// inspectTable reads the lock table's columns and refuses a table that
// would break exclusion: lock times cut to the second, time columns of two
// kinds, or columns of another kind.
func inspectTable(ctx context.Context, db *sql.DB, table, encoding string) (*tableInfo, error) {
	rows, err := db.QueryContext(ctx, columnsSQL, table)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
	}
	defer rows.Close()
	cols := map[string]column{}
	for rows.Next() {
		var c column
		if err := rows.Scan(&c.name, &c.typ, &c.typmod, &c.display, &c.deterministic, &c.collation, &c.qualifiedCollation); err != nil {
			return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
		}
		cols[c.name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, sqlstore.MissingTable("postgres", table, " (or is not on the search_path)")
	}
	t := &tableInfo{display: table, encoding: encoding}
	for _, c := range []struct {
		dst   *column
		name  string
		kinds []string
	}{
		{&t.name, "name", []string{"varchar", "bpchar", "text"}},
		{&t.lockUntil, "lock_until", []string{"timestamp", "timestamptz"}},
		{&t.lockedAt, "locked_at", []string{"timestamp", "timestamptz"}},
		{&t.lockedBy, "locked_by", []string{"varchar", "bpchar", "text"}},
	} {
		col, ok := cols[c.name]
		if !ok {
			return nil, fmt.Errorf("%w: table %s has no column %s: create it with the DDL of migrations/postgres",
				lockerr.UnsafeStore, table, c.name)
		}
		if !slices.Contains(c.kinds, col.typ) {
			return nil, fmt.Errorf("%w: table %s: column %s, want one of %s", lockerr.UnsafeStore, table,
				col, strings.Join(c.kinds, ", "))
		}
		*c.dst = col
	}
	if c, ok := cols["fence"]; ok {
		if c.typ != "int8" {
			return nil, fmt.Errorf("%w: table %s: column %s, want bigint, as migration 0002 adds it: fencing "+
				"tokens are microseconds since 1970", lockerr.UnsafeStore, table, c)
		}
		t.fence = true
	}
	if c, ok := cols["last_success"]; ok {
		if c.typ != "int8" {
			return nil, fmt.Errorf("%w: table %s: column %s, want bigint, as migration 0003 adds it: fire "+
				"times are milliseconds since 1970", lockerr.UnsafeStore, table, c)
		}
		t.lastSuccess = true
	}
	for _, name := range sqlstore.ControlColumns {
		c, ok := cols[name]
		switch {
		case !ok:
		case name == sqlstore.RunsDoneByColumn:
			if !slices.Contains([]string{"varchar", "bpchar", "text"}, c.typ) || c.holds() < t.lockedBy.holds() {
				return nil, fmt.Errorf("%w: table %s: column %s, want %s as locked_by, as migration %s adds it: it holds "+
					"an acquisition's token", lockerr.UnsafeStore, table, c, t.lockedBy.display, sqlstore.ControlMigration)
			}
		case c.typ != "int8":
			return nil, fmt.Errorf("%w: table %s: column %s, want bigint, as migration %s adds it: pause times "+
				"are milliseconds since 1970, run requests counts", lockerr.UnsafeStore, table, c, sqlstore.ControlMigration)
		}
	}
	t.missingControl = sqlstore.MissingControl(func(c string) bool { _, ok := cols[c]; return ok })
	t.control = len(t.missingControl) == 0
	if t.lockUntil.typ != t.lockedAt.typ {
		return nil, fmt.Errorf("%w: table %s: columns %s and %s differ; make both timestamp, as Java ShedLock's "+
			"table has them, or both timestamptz", lockerr.UnsafeStore, table, t.lockUntil, t.lockedAt)
	}
	for _, c := range []column{t.lockUntil, t.lockedAt} {
		if c.precision() < 3 {
			return nil, fmt.Errorf("%w: table %s: column %s keeps fewer than 3 fractional digits, so lock times "+
				"would be rounded by up to half a second and a lock could end that much early; keep microseconds: ALTER TABLE %s ALTER COLUMN %s TYPE %s",
				lockerr.UnsafeStore, table, c, table, c.name, c.typ)
		}
	}
	return t, nil
}

// checkLockedBy refuses a locked_by column that cannot store this provider's
// tokens exactly: a cut token could match another acquisition's.
func (t *tableInfo) checkLockedBy(lockedBy string) error {
	longest := lockedBy + ".18446744073709551615"
	if n, max := utf8.RuneCountInString(longest), t.lockedBy.maxChars(); max > 0 && n > max {
		return fmt.Errorf("%w: table %s: column %s is too short for this provider's owner %q (%d characters "+
			"with the acquisition number); widen it to varchar(255) or give a shorter WithLockedBy",
			lockerr.UnsafeStore, t.display, t.lockedBy, lockedBy, n)
	}
	if why := t.unstorable(lockedBy); why != "" {
		return fmt.Errorf("%w: table %s: column %s cannot store this provider's owner %q: %s; give a "+
			"WithLockedBy it can store", lockerr.UnsafeStore, t.display, t.lockedBy, lockedBy, why)
	}
	return nil
}

// checkName refuses a name that the name column would not store as given:
// PostgreSQL cuts trailing spaces past a varchar's length without an error,
// a char column pads and compares without them, and no text holds a NUL.
func (t *tableInfo) checkName(name string) error {
	why := t.unstorable(name)
	switch max := t.name.maxChars(); {
	case why != "":
	case max > 0 && utf8.RuneCountInString(name) > max:
		why = fmt.Sprintf("it holds at most %d characters", max)
	case t.name.typ == "bpchar" && strings.HasSuffix(name, " "):
		why = "a char column drops trailing spaces"
	}
	if why != "" {
		return fmt.Errorf("%w: lock %q: the name column (%s) cannot store this name exactly: %s",
			lockerr.InvalidConfig, name, t.name, why)
	}
	return nil
}

// unstorable says why a text column of this database cannot hold s as given;
// "" when it can. Outside UTF8 databases only ASCII is the same in every
// encoding, and in SQL_ASCII lengths count bytes.
func (t *tableInfo) unstorable(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		return "PostgreSQL text cannot hold a NUL character"
	}
	if t.encoding != "UTF8" {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				return "the database's encoding is " + t.encoding + ", so only ASCII is stored as given"
			}
		}
	}
	return ""
}
