package sqlite

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
	insertSQL = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)"
	updateSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')"

	// With a fence column (migration 0002), acquiring also writes the fencing
	// token and returns it: the largest of the row's last token + 1, 'now' in
	// microseconds since 1970, and the host's clock in microseconds as the
	// acquiring process read it (the last ?). The first keeps tokens
	// increasing when the clock steps back, the others across a row deleted by
	// hand, which loses the last token. SQLite's 'now' has only milliseconds:
	// alone, it gave a row deleted and taken again within one millisecond the
	// token of the acquisition before. The host's clock is the one 'now' reads
	// (SQLite has no server: every process on the file is on this host), and
	// it has moved on by at least a microsecond between two acquisitions, with
	// a commit and a delete between them. Java ShedLock leaves the column as
	// it is; a NULL counts as 0. RETURNING needs SQLite 3.35.
	fencedInsertSQL = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by, fence) " +
		"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now'), ?, max(" + nowMicros + ", ?)) RETURNING fence"
	fencedUpdateSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ?, " +
		"fence = max(coalesce(fence, 0) + 1, " + nowMicros + ", ?) " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now') RETURNING fence"
	// A batch (TryLockBatch) is one upsert of many rows, read from one JSON
	// parameter (?1: an array of [name, token, milliseconds]), so that its
	// text is the same for every batch size; ?2 is the host's clock in
	// microseconds, as above. Each row is taken on the condition of updateSQL,
	// and a row deleted by hand is made again. SQLite writes one statement at
	// a time to the file, so the order of rows (by name) cannot deadlock; it
	// is the one order of the other stores. RETURNING gives the rows it took,
	// with their tokens. The WHERE true is SQLite's rule for a SELECT in an
	// upsert, which would read ON CONFLICT as a join's ON otherwise.
	batchSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by{fenceCol}) " +
		"SELECT json_extract(b.value, '$[0]'), strftime('%Y-%m-%d %H:%M:%f', julianday('now') + " +
		"json_extract(b.value, '$[2]') / 86400000.0), strftime('%Y-%m-%d %H:%M:%f', 'now'), " +
		"json_extract(b.value, '$[1]'){fenceNew} FROM json_each(?1) AS b WHERE true ORDER BY 1 " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = excluded.lock_until, locked_at = excluded.locked_at, " +
		"locked_by = excluded.locked_by{fenceSet} WHERE l.lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now') " +
		"RETURNING locked_by{fenceRet}"
	batchFenceCol = ", fence"
	batchFenceNew = ", max(" + nowMicros + ", ?2)"
	batchFenceSet = ", fence = max(coalesce(l.fence, 0) + 1, excluded.fence)"
	batchFenceRet = ", fence"
	nowMicros     = "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000"
	releaseSQL    = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
	extendSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0) " +
		"WHERE name = ? AND locked_by = ? AND lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now')"

	// Administration (see Admin). Times are milliseconds since 1970; held and
	// left are SQLite's view, against its clock.
	locksSQL = "SELECT name, locked_by, " + lockedAtMillis + ", " + lockUntilMillis + ", " +
		"lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now'), " +
		"max(CAST(round((julianday(lock_until) - julianday('now')) * 86400000.0) AS INTEGER), 0){control} FROM {t}"
	allLocksTail = " ORDER BY name"
	oneLockTail  = " WHERE name = ?"
	// Frees the row if it is still as read (the same locked_by, locked_at and
	// lock_until: not taken since, nor released) and still held or free as read:
	// the holder's locked_by is replaced, so that its Unlock and Extend find the
	// lock lost.
	forceUnlockSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND locked_by = ? AND " + lockedAtMillis + " = ? AND " + lockUntilMillis + " = ? " +
		"AND (lock_until > strftime('%Y-%m-%d %H:%M:%f', 'now')) = ?"
	lockedAtMillis  = "CAST(round((julianday(locked_at) - 2440587.5) * 86400000.0) AS INTEGER)"
	lockUntilMillis = "CAST(round((julianday(lock_until) - 2440587.5) * 86400000.0) AS INTEGER)"
	// The health probe: needs the table, its columns and a writable database,
	// and changes nothing.
	probeSQL = "UPDATE {t} SET lock_until = lock_until, locked_at = locked_at, locked_by = locked_by WHERE 0"

	// First use: the columns of the table, and the pool's settings.
	columnsSQL  = "SELECT name FROM pragma_table_info(?)"
	versionSQL  = "SELECT sqlite_version()"
	settingsSQL = "SELECT b.timeout, j.journal_mode FROM pragma_busy_timeout AS b, pragma_journal_mode AS j"
)

// CatchUp's statements, on a table with the last_success column (migration
// 0003): the fire time, in milliseconds since 1970, of the lock's last run
// that succeeded. They run only for CatchUp jobs. addRowSQL makes a free row
// for a name that has none; the acquisitions are updateSQL's, on the further
// condition that the recorded fire time is older than the run's (the last ?),
// so that a fire time that succeeded is never taken again; the release is
// releaseSQL's, and records the run's fire time unless a later one is.
const (
	addRowSQL = "INSERT OR IGNORE INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)"
	fireCond      = " AND (last_success IS NULL OR last_success < ?)"
	fireUpdateSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')" + fireCond
	fencedFireUpdateSQL = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ?, " +
		"fence = max(coalesce(fence, 0) + 1, " + nowMicros + ", ?) " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')" + fireCond + " RETURNING fence"
	fireReleaseSQL = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')), last_success = max(coalesce(last_success, 0), ?) " +
		"WHERE name = ? AND locked_by = ?"
	lastFireSQL = "SELECT last_success FROM {t} WHERE name = ?"
)
