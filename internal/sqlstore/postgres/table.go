package postgres

import (
	"context"
	"database/sql"
	"fmt"
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
	cols := sqlstore.Columns[column]{Table: table, Dir: "postgres", Kind: func(c column) string { return c.typ }}
	if err := cols.ReadColumns(ctx, db, " (or is not on the search_path)", scanColumn, columnsSQL, table); err != nil {
		return nil, err
	}
	t := &tableInfo{display: table, encoding: encoding}
	err := cols.Require([]sqlstore.Required[column]{
		{Dst: &t.name, Name: "name", Kinds: []string{"varchar", "bpchar", "text"}},
		{Dst: &t.lockUntil, Name: "lock_until", Kinds: []string{"timestamp", "timestamptz"}},
		{Dst: &t.lockedAt, Name: "locked_at", Kinds: []string{"timestamp", "timestamptz"}},
		{Dst: &t.lockedBy, Name: "locked_by", Kinds: []string{"varchar", "bpchar", "text"}},
	}, func(c column, kinds []string) error {
		return fmt.Errorf("%w: table %s: column %s, want one of %s", lockerr.UnsafeStore, table,
			c, strings.Join(kinds, ", "))
	})
	if err != nil {
		return nil, err
	}
	if t.fence, t.lastSuccess, err = cols.Later("int8", "bigint"); err != nil {
		return nil, err
	}
	if err := t.checkTimes(); err != nil {
		return nil, err
	}
	return t, nil
}

// scanColumn reads one row of columnsSQL.
func scanColumn(rows *sql.Rows) (string, column, error) {
	var c column
	err := rows.Scan(&c.name, &c.typ, &c.typmod, &c.display, &c.deterministic, &c.collation, &c.qualifiedCollation)
	return c.name, c, err
}

// checkTimes refuses time columns of two kinds, or that keep fewer than
// milliseconds.
func (t *tableInfo) checkTimes() error {
	table := t.display
	if t.lockUntil.typ != t.lockedAt.typ {
		return fmt.Errorf("%w: table %s: columns %s and %s differ; make both timestamp, as Java ShedLock's "+
			"table has them, or both timestamptz", lockerr.UnsafeStore, table, t.lockUntil, t.lockedAt)
	}
	for _, c := range []column{t.lockUntil, t.lockedAt} {
		if c.precision() < 3 {
			return fmt.Errorf("%w: table %s: column %s keeps fewer than 3 fractional digits, so lock times "+
				"would be rounded by up to half a second and a lock could end that much early; keep microseconds: ALTER TABLE %s ALTER COLUMN %s TYPE %s",
				lockerr.UnsafeStore, table, c, table, c.name, c.typ)
		}
	}
	return nil
}

// checkLockedBy refuses a locked_by column that cannot store this provider's
// tokens exactly: a cut token could match another acquisition's.
func (t *tableInfo) checkLockedBy(lockedBy string) error {
	if max := t.lockedBy.maxChars(); max > 0 { // 0: text, or varchar without a length
		if _, err := sqlstore.TokenFits(t.display, t.lockedBy, lockedBy, max, "varchar(255)"); err != nil {
			return err
		}
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
