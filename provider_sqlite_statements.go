package shedlock

import (
	"database/sql"
	"strings"
)

// The SQLite statements. {t} is the quoted table name. Times are TEXT in UTC, in
// the fixed-width form 'YYYY-MM-DD HH:MM:SS.SSS' that strftime's %f writes, so
// that comparing two of them as strings compares the instants. SQLite reads
// 'now' once per statement, so every 'now' in one statement is the same instant.
//
// Each ? duration is a whole number of milliseconds, added to a Julian day
// number: a number binds without the per-call string that a '+N seconds'
// modifier would need. The sum is a double, but strftime rounds a Julian day to
// the nearest millisecond and the sum is off by well under half of one for any
// date SQLite accepts, so the result is the exact millisecond a modifier gives.
const (
	// Database time, the default.
	sqliteInsert = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)"
	sqliteUpdate = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')"
	sqliteRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
	sqliteExtend = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0) " +
		"WHERE name = ? AND locked_by = ? AND lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now')"

	// Client time, only with WithClientClock; every other ? time is this
	// process's now, formatted with sqliteTimeLayout.
	sqliteClientInsert = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) VALUES (?, ?, ?, ?)"
	sqliteClientUpdate = "UPDATE {t} SET lock_until = ?, locked_at = ?, locked_by = ? " +
		"WHERE name = ? AND lock_until <= ?"
	sqliteClientRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), ?) " +
		"WHERE name = ? AND locked_by = ?"
	sqliteClientExtend = "UPDATE {t} SET lock_until = ? WHERE name = ? AND locked_by = ? AND lock_until > ?"

	// sqliteTimeLayout is the Go form of strftime('%Y-%m-%d %H:%M:%f').
	sqliteTimeLayout = "2006-01-02 15:04:05.000"
)

// sqliteStatements are the four statements of one mode, prepared, indexed by
// stmtInsert, stmtUpdate, stmtRelease and stmtExtend.
type sqliteStatements [4]*sql.Stmt

// sqliteTexts returns the four statements of one mode with the table filled in,
// in sqliteStatements order.
func sqliteTexts(table string, client bool) [4]string {
	texts := [4]string{sqliteInsert, sqliteUpdate, sqliteRelease, sqliteExtend}
	if client {
		texts = [4]string{sqliteClientInsert, sqliteClientUpdate, sqliteClientRelease, sqliteClientExtend}
	}
	for i, s := range texts {
		texts[i] = strings.ReplaceAll(s, "{t}", table)
	}
	return texts
}
