// Package floor holds the statements the providers send in steady state, so that
// the benchmarks can send them directly and measure the floor the library is
// compared with. They are copies: a change to a provider's statements must be
// made here too, or the comparison is no longer like for like.
package floor

import "strings"

// MySQL's steady-state acquire and release; {t} is the quoted table.
const (
	MySQLAcquire = "UPDATE {t} SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), " +
		"locked_at = UTC_TIMESTAMP(3), locked_by = ? WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)"
	MySQLRelease = "UPDATE {t} SET lock_until = IF(TIMESTAMPADD(MICROSECOND, ?, locked_at) > UTC_TIMESTAMP(3), " +
		"TIMESTAMPADD(MICROSECOND, ?, locked_at), UTC_TIMESTAMP(3)) WHERE name = ? AND locked_by = ?"
)

// SQLite's steady-state acquire and release; {t} is the quoted table.
const (
	SQLiteAcquire = "UPDATE {t} SET lock_until = strftime('%Y-%m-%d %H:%M:%f', julianday('now') + ? / 86400000.0), " +
		"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? " +
		"WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')"
	SQLiteRelease = "UPDATE {t} SET lock_until = max(strftime('%Y-%m-%d %H:%M:%f', julianday(locked_at) + ? / 86400000.0), " +
		"strftime('%Y-%m-%d %H:%M:%f', 'now')) WHERE name = ? AND locked_by = ?"
)

// PostgreSQL's acquire (every time: the upsert) and release; {t} is the quoted
// table and {now} the statement's time as the provider writes it to Java
// ShedLock's timestamp columns.
const (
	PostgresAcquire = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by) " +
		"VALUES ($1, {now} + $2::bigint * interval '1 millisecond', {now}, $3) " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, " +
		"locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by WHERE l.lock_until <= {now}"
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
