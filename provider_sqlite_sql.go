package shedlock

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

	// Administration (see Admin). Times are milliseconds since 1970; held and
	// left are SQLite's view, against its clock. locked_at is also read as
	// stored, for the force unlock to compare.
	sqliteLocks = "SELECT name, locked_by, locked_at, " +
		"CAST(round((julianday(locked_at) - 2440587.5) * 86400000.0) AS INTEGER), " +
		"CAST(round((julianday(lock_until) - 2440587.5) * 86400000.0) AS INTEGER), " +
		"lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now'), " +
		"max(CAST(round((julianday(lock_until) - julianday('now')) * 86400000.0) AS INTEGER), 0) FROM {t}"
	sqliteAllLocks = sqliteLocks + " ORDER BY name"
	sqliteOneLock  = sqliteLocks + " WHERE name = ?"
	// Frees the row if it still holds the acquisition read: the holder's
	// locked_by is replaced, so that its Unlock and Extend find the lock lost.
	sqliteForceUnlock = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND locked_by = ? AND locked_at = ?"
	// The health probe: needs the table, its columns and a writable database,
	// and changes nothing.
	sqliteProbe = "UPDATE {t} SET lock_until = lock_until, locked_at = locked_at, locked_by = locked_by WHERE 0"

	// First use: the columns of the table, and the pool's settings.
	sqliteColumns  = "SELECT name FROM pragma_table_info(?)"
	sqliteSettings = "SELECT b.timeout, j.journal_mode FROM pragma_busy_timeout AS b, pragma_journal_mode AS j"
)
