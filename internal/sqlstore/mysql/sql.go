package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// The MySQL/MariaDB statements. {t} is the quoted table name. Every statement runs
// with the session time zone pinned to UTC for that statement alone (see
// utcDialect), because lock_until is a TIMESTAMP: a session in another zone
// would write and read UTC_TIMESTAMP values shifted by its offset.
const (
	// Acquisition is one statement whether or not the row exists, as on
	// PostgreSQL: the INSERT makes the row on a name's first use, or after it was
	// deleted by hand, and ON DUPLICATE KEY UPDATE takes the existing row only
	// when its lock has run out; otherwise every column keeps its value. MySQL
	// evaluates the assignments left to right, each seeing the new values of
	// those before it, so lock_until, which the others test, is assigned last.
	// The arguments are repeated rather than read with VALUES(), which MySQL 8
	// deprecates and MariaDB's sql_mode=ORACLE refuses.
	//
	// Rows affected: 1 inserted, 2 taken, 0 held. Under clientFoundRows=true a
	// held row, left as it was, also reports 1 (see Store.Insert).
	acquireSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), ?) " +
		"ON DUPLICATE KEY UPDATE {pauseMark}locked_by = IF({free}, ?, locked_by), " +
		"locked_at = IF({free}, UTC_TIMESTAMP(3), locked_at), " +
		"lock_until = IF({free}, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), lock_until)"
	// With a fence column (migration 0002), the acquisition also writes the
	// fencing token, and returns it as the statement's LAST_INSERT_ID(expr),
	// which the server sends back with the count of rows: the larger of the
	// row's last token + 1 and the statement's instant in microseconds since
	// 1970. The first keeps tokens increasing when the clock steps back, the
	// second across a row deleted by hand. The fence is assigned first, while
	// lock_until is still the old one. VALUES sets LAST_INSERT_ID too when the
	// row exists, but then only a taken row's count is read, and taking it sets
	// it again. Java ShedLock leaves the column as it is; a NULL counts as 0.
	fencedAcquireSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by, fence) " +
		"VALUES (?, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), ?, LAST_INSERT_ID(" + nowMicros + ")) " +
		"ON DUPLICATE KEY UPDATE {pauseMark}fence = IF({free}, " +
		"LAST_INSERT_ID(GREATEST(COALESCE(fence, 0) + 1, " + nowMicros + ")), fence), " +
		"locked_by = IF({free}, ?, locked_by), " +
		"locked_at = IF({free}, UTC_TIMESTAMP(3), locked_at), " +
		"lock_until = IF({free}, TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), lock_until)"
	nowMicros  = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))"
	releaseSQL = "UPDATE {t} SET lock_until = IF(TIMESTAMPADD(MICROSECOND, ?, locked_at) > UTC_TIMESTAMP(3), " +
		"TIMESTAMPADD(MICROSECOND, ?, locked_at), UTC_TIMESTAMP(3)) WHERE name = ? AND locked_by = ?"
	extendSQL = "UPDATE {t} SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)) " +
		"WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)"
	// An UPDATE that leaves a row as it was reports 0 rows, and an upsert 1 under
	// clientFoundRows=true: these tell "ours" from "not ours". They run only
	// after such a count.
	ownedSQL          = "SELECT COUNT(*) FROM {t} WHERE name = ? AND locked_by = ?"
	ownedUnexpiredSQL = "SELECT COUNT(*) FROM {t} WHERE name = ? AND locked_by = ? AND lock_until > UTC_TIMESTAMP(3)"

	// Administration (see Admin). Times are microseconds since 1970 in UTC
	// (the session is pinned to UTC), so that any driver reads them the same
	// way; held and left are the database's view, against its own clock. A name
	// is matched exactly, not by the name column's collation: an operator acts
	// on the row listed, not on another that compares equal.
	locksSQL = "SELECT name, locked_by, TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', locked_at), " +
		"TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', lock_until), lock_until > UTC_TIMESTAMP(3), " +
		"GREATEST(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(3), lock_until), 0){control} FROM {t}"
	allLocksTail = " ORDER BY name"
	oneLockTail  = " WHERE name = ? AND " + exactNameSQL
	exactNameSQL = "CAST(CONVERT(name USING utf8mb4) AS BINARY) = CAST(? AS BINARY)"
	// Frees the row if it is still as read (the same locked_by, locked_at and
	// lock_until: not taken since, nor released) and still held or free as read
	// (a read can see a release whose now is later than its own): the holder's
	// locked_by is replaced, so that its Unlock and Extend find the lock lost.
	forceUnlockSQL = "UPDATE {t} SET lock_until = UTC_TIMESTAMP(3), locked_by = ? WHERE name = ? AND " +
		exactNameSQL + " AND locked_by = ? AND TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', locked_at) = ? " +
		"AND TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', lock_until) = ? AND (lock_until > UTC_TIMESTAMP(3)) = ?"
	// The health probe: needs the table, its columns and the right to write
	// them, and changes nothing.
	probeSQL = "UPDATE {t} SET lock_until = lock_until, locked_at = locked_at, locked_by = locked_by WHERE 1 = 0"

	// EnsureTable's check, when CREATE is refused, that the table exists.
	tableExistsSQL = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"

	// First use: the session's settings, then the table's columns.
	sessionSQL   = "SELECT VERSION(), @@session.autocommit"
	columnsQuery = "SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE), COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), " +
		"CHARACTER_SET_NAME, COLLATION_NAME, COALESCE(DATETIME_PRECISION, 0) " +
		"FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"
)

// utcDialect rewrites a statement so that it runs with time_zone '+00:00'
// without a separate round trip: MariaDB's SET STATEMENT ... FOR, or MySQL 8's
// SET_VAR optimizer hint.
type utcDialect func(stmt string) string

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
func detectUTCDialect(ctx context.Context, db *sql.DB, version string) (utcDialect, error) {
	dialect := utcDialect(mysql8UTC)
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
			lockerr.UnsafeStore, version, zone)
	}
	return dialect, nil
}

// CatchUp's statements, on a table with the last_success column (migration
// 0003): the fire time, in milliseconds since 1970, of the lock's last run
// that succeeded. They run only for CatchUp jobs. addRowSQL makes a free row
// for a name that has none and leaves an existing one as it is; the
// acquisition is a conditional UPDATE, taken only when the lock has run out
// and the recorded fire time is older than the run's (the last ?), so that a
// fire time that succeeded is never taken again. It writes a new token to
// locked_by, so that a row it matched is a row it changed, whether the pool
// counts found or changed rows. The fenced one returns the token as
// LAST_INSERT_ID(expr), as fencedAcquireSQL does. The release is releaseSQL's,
// and records the run's fire time unless a later one is.
const (
	addRowSQL = "INSERT INTO {t} (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, UTC_TIMESTAMP(3), UTC_TIMESTAMP(3), ?) ON DUPLICATE KEY UPDATE lock_until = lock_until"
	fireAcquireSQL = "UPDATE {t} SET locked_by = ?, locked_at = UTC_TIMESTAMP(3), " +
		"lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)) " +
		"WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3) AND (last_success IS NULL OR last_success < ?)"
	fencedFireAcquireSQL = "UPDATE {t} SET fence = LAST_INSERT_ID(GREATEST(COALESCE(fence, 0) + 1, " + nowMicros + ")), " +
		"locked_by = ?, locked_at = UTC_TIMESTAMP(3), lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)) " +
		"WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3) AND (last_success IS NULL OR last_success < ?)"
	fireReleaseSQL = "UPDATE {t} SET last_success = GREATEST(COALESCE(last_success, 0), ?), " +
		"lock_until = IF(TIMESTAMPADD(MICROSECOND, ?, locked_at) > UTC_TIMESTAMP(3), " +
		"TIMESTAMPADD(MICROSECOND, ?, locked_at), UTC_TIMESTAMP(3)) WHERE name = ? AND locked_by = ?"
	lastFireSQL = "SELECT last_success FROM {t} WHERE name = ?"
)
