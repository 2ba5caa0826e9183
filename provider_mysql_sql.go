package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// The MySQL/MariaDB statements. {t} is the quoted table name. Every statement runs
// with the session time zone pinned to UTC for that statement alone (see
// mysqlUTCDialect), because lock_until is a TIMESTAMP: a session in another zone
// would write and read UTC_TIMESTAMP values shifted by its offset.
const (
	mysqlInsert = "INSERT IGNORE INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), ?)"
	mysqlUpdate = "UPDATE {t} SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), " +
		"locked_at = UTC_TIMESTAMP(3), locked_by = ? WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)"
	mysqlRelease = "UPDATE {t} SET lock_until = IF(TIMESTAMPADD(MICROSECOND, ?, locked_at) > UTC_TIMESTAMP(3), " +
		"TIMESTAMPADD(MICROSECOND, ?, locked_at), UTC_TIMESTAMP(3)) WHERE name = ? AND locked_by = ?"
	mysqlExtend = "UPDATE {t} SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)) " +
		"WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)"
	// An UPDATE that leaves a row as it was reports 0 rows: these tell "ours,
	// unchanged" from "not ours". They run only after such a 0.
	mysqlOwned          = "SELECT COUNT(*) FROM {t} WHERE name = ? AND locked_by = ?"
	mysqlOwnedUnexpired = "SELECT COUNT(*) FROM {t} WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)"

	// Administration (see Admin). Times are microseconds since 1970 in UTC
	// (the session is pinned to UTC), so that any driver reads them the same
	// way; held and left are the database's view, against its own clock. A name
	// is matched exactly, not by the name column's collation: an operator acts
	// on the row listed, not on another that compares equal.
	mysqlLocks = "SELECT name, locked_by, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', locked_at), " +
		"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', lock_until), lock_until > UTC_TIMESTAMP(3), " +
		"GREATEST(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until), 0) FROM {t}"
	mysqlAllLocks  = mysqlLocks + " ORDER BY name"
	mysqlOneLock   = mysqlLocks + " WHERE name = ? AND " + mysqlExactName
	mysqlExactName = "CAST(CONVERT(name USING utf8mb4) AS BINARY) = CAST(? AS BINARY)"
	// Frees the row if it still holds the acquisition read: the holder's
	// locked_by is replaced, so that its Unlock and Extend find the lock lost.
	mysqlForceUnlock = "UPDATE {t} SET lock_until = UTC_TIMESTAMP(3), locked_by = ? WHERE name = ? AND " +
		mysqlExactName + " AND locked_by = ? AND TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', locked_at) = ?"
	// The health probe: needs the table, its columns and the right to write
	// them, and changes nothing.
	mysqlProbe = "UPDATE {t} SET lock_until = lock_until, locked_at = locked_at, locked_by = locked_by WHERE 1 = 0"

	// First use: the session's settings, then the table's columns.
	mysqlSession = "SELECT VERSION(), @@session.autocommit"
	mysqlColumns = "SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), " +
		"COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), COALESCE(DATETIME_PRECISION, 0) " +
		"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"
)

// mysqlUTCDialect rewrites a statement so that it runs with time_zone '+00:00'
// without a separate round trip: MariaDB's SET STATEMENT ... FOR, or MySQL 8's
// SET_VAR optimizer hint.
type mysqlUTCDialect func(stmt string) string

func mariadbUTC(stmt string) string {
	return "SET STATEMENT time_zone = '+00:00' FOR " + stmt
}

func mysql8UTC(stmt string) string {
	verb, rest, _ := strings.Cut(stmt, " ")
	return verb + " /*+ SET_VAR(time_zone = '+00:00') */ " + rest
}

// detectUTCDialect picks the form the server version understands, and checks that
// the form really sets the zone (MySQL ignores a hint it does not know, with a
// warning).
func detectUTCDialect(ctx context.Context, db *sql.DB, version string) (mysqlUTCDialect, error) {
	dialect := mysqlUTCDialect(mysql8UTC)
	if strings.Contains(strings.ToLower(version), "mariadb") {
		dialect = mariadbUTC
	}
	var zone string
	if err := db.QueryRowContext(ctx, dialect("SELECT @@session.time_zone")).Scan(&zone); err != nil {
		// A dropped connection or a cancelled ctx is not a verdict on the server:
		// wrapped, so that callers can tell, and the next attempt probes again.
		return nil, fmt.Errorf("shedlock: probe whether server %s can pin time_zone for one statement "+
			"(MariaDB's SET STATEMENT or MySQL 8's SET_VAR hint): %w", version, err)
	}
	if zone != "+00:00" {
		return nil, fmt.Errorf("%w: server %s did not pin time_zone to +00:00 for one statement "+
			"(MariaDB's SET STATEMENT or MySQL 8's SET_VAR hint); without it lock times would depend "+
			"on each session's zone, so the provider refuses to run (probe: zone %q)",
			ErrUnsafeStore, version, zone)
	}
	return dialect, nil
}
