// Package floor holds the statements the providers send in steady state, so that
// the benchmarks can send them directly and measure the floor the library is
// compared with. They are copies: a change to a provider's statements must be
// made here too, or the comparison is no longer like for like.
package floor

import "strings"

// MySQL's acquire (every time: the upsert, which also writes the fencing
// token and returns it as LAST_INSERT_ID) and release; {t} is the quoted
// table, which has the fence column. The acquire's arguments are name,
// LockAtMostFor in microseconds, owner, owner, LockAtMostFor in microseconds;
// it reports 2 rows when it takes an existing row.
const (
	MySQLAcquire = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, fence) " +
		"VALUES (?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), ?, " +
		"LAST_INSERT_ID(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))) " +
		"ON DUPLICATE KEY UPDATE fence = IF(lock_until <= UTC_TIMESTAMP(3), " +
		"LAST_INSERT_ID(GREATEST(COALESCE(fence, 0) + 1, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)))), fence), " +
		"locked_by = IF(lock_until <= UTC_TIMESTAMP(3), ?, locked_by), " +
		"locked_at = IF(lock_until <= UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), locked_at), " +
		"lock_until = IF(lock_until <= UTC_TIMESTAMP(3), TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), lock_until)"
	MySQLRelease = "UPDATE {t} SET lock_until = IF(TIMESTAMPADD(MICROSECOND, ?, locked_at) > UTC_TIMESTAMP(3), " +
		"TIMESTAMPADD(MICROSECOND, ?, locked_at), UTC_TIMESTAMP(3)) WHERE name = ? AND locked_by = ?"
)

// SQLite's steady-state acquire (which writes the fencing token and returns
// it: one row when it took the lock) and release; {t} is the quoted table,
// which has every migration's columns, as EnsureTable makes it: the acquire
// matches a paused row too and leaves it as it is (migration 0004), and
// returns whether it was paused. Its arguments are LockAtMostFor in
// milliseconds, owner, the host's clock in microseconds (the least token) and
// name.
const (
	SQLiteAcquire = "UPDATE {t} SET lock_until = CASE WHEN " + sqlitePaused + " THEN lock_until ELSE " +
		"strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0) END, " +
		"locked_at = CASE WHEN " + sqlitePaused + " THEN locked_at ELSE strftime('%Y-%m-%d %H:%M:%f', 'now') END, " +
		"locked_by = CASE WHEN " + sqlitePaused + " THEN locked_by ELSE ? END, " +
		"fence = CASE WHEN " + sqlitePaused + " THEN fence ELSE max(coalesce(fence, 0) + 1, " +
		"CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000, ?) END " +
		"WHERE name = ? AND (" + sqlitePaused + " OR (lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now'))) " +
		"RETURNING coalesce(fence, 0), " + sqlitePaused
	sqlitePaused = "(paused_at IS NOT NULL AND (paused_until IS NULL OR paused_until > " +
		"CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)))"
	SQLiteRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
)

// PostgreSQL's acquire (every time: the upsert, which writes the fencing token
// and returns the row's table, owner and token) and release; {t} is the quoted
// table, which has the fence column, and {now} the statement's time as the
// provider writes it to Java ShedLock's timestamp columns.
const (
	PostgresAcquire = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by, fence) " +
		"VALUES ($1, {now} + $2::bigint * interval '1 millisecond', {now}, $3, " +
		"(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000)::bigint) " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, " +
		"locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by, fence = GREATEST(l.fence + 1, EXCLUDED.fence) " +
		"WHERE l.lock_until <= {now} RETURNING tableoid::int8, locked_by::text, fence"
	PostgresRelease = "UPDATE {t} SET lock_until = GREATEST(locked_at + $1::bigint * interval '1 millisecond', {now}) " +
		"WHERE name = $2 AND locked_by = $3"
)

// Postgres returns stmt on table, with the provider's "now" for timestamp
// columns.
func Postgres(stmt, table string) string {
	return strings.NewReplacer("{t}", `"`+table+`"`, "{now}", "(statement_timestamp() AT TIME ZONE 'UTC')").Replace(stmt)
}

// MySQL returns stmt on table with the per-statement UTC pin the provider uses
// on this server version.
func MySQL(stmt, table, version string) string {
	stmt = strings.ReplaceAll(stmt, "{t}", "`"+table+"`")
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return "SET STATEMENT time_zone = '+00:00' FOR " + stmt
	}
	verb, rest, _ := strings.Cut(stmt, " ")
	return verb + " /*+ SET_VAR(time_zone = '+00:00') */ " + rest
}

// SQLite returns stmt on table.
func SQLite(stmt, table string) string {
	return strings.ReplaceAll(stmt, "{t}", `"`+table+`"`)
}
