package shedlock

import (
	"fmt"
	"strings"
	"time"
)

// The SQLite statements. {t} is the quoted table name. Times are TEXT in UTC, in
// the fixed-width form 'YYYY-MM-DD HH:MM:SS.SSS' that strftime's %f writes, so
// that comparing two of them as strings compares the instants. SQLite reads
// 'now' once per statement, so every 'now' in one statement is the same instant.
const (
	// Database time, the default. Each ? duration is a modifier such as
	// '+600.000 seconds' (see sqliteModifier).
	sqliteInsert = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', 'now', ?), strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)"
	sqliteUpdate = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')"
	sqliteRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', locked_at, ?), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
	sqliteExtend = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now', ?) " +
		"WHERE name = ? AND locked_by = ? AND lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now')"

	// Client time, only with WithClientClock; every other ? time is this
	// process's now, formatted with sqliteTimeLayout.
	sqliteClientInsert = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) VALUES (?, ?, ?, ?)"
	sqliteClientUpdate = "UPDATE {t} SET lock_until = ?, locked_at = ?, locked_by = ? " +
		"WHERE name = ? AND lock_until <= ?"
	sqliteClientRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', locked_at, ?), ?) " +
		"WHERE name = ? AND locked_by = ?"
	sqliteClientExtend = "UPDATE {t} SET lock_until = ? WHERE name = ? AND locked_by = ? AND lock_until > ?"

	// sqliteTimeLayout is the Go form of strftime('%Y-%m-%d %H:%M:%f').
	sqliteTimeLayout = "2006-01-02 15:04:05.000"
)

// sqliteModifier turns d into a date-function modifier, to the millisecond that
// the stored times keep. It is passed as an argument, never spliced into SQL.
func sqliteModifier(d time.Duration) string {
	ms := d.Milliseconds()
	return fmt.Sprintf("+%d.%03d seconds", ms/1000, ms%1000)
}

// sqliteStatements are the four statements of one mode with the table filled in.
type sqliteStatements struct {
	insert, update, release, extend string
}

func newSQLiteStatements(table string, client bool) sqliteStatements {
	texts := [4]string{sqliteInsert, sqliteUpdate, sqliteRelease, sqliteExtend}
	if client {
		texts = [4]string{sqliteClientInsert, sqliteClientUpdate, sqliteClientRelease, sqliteClientExtend}
	}
	for i, s := range texts {
		texts[i] = strings.ReplaceAll(s, "{t}", table)
	}
	return sqliteStatements{insert: texts[0], update: texts[1], release: texts[2], extend: texts[3]}
}
