package postgres

import "strings"

// The PostgreSQL statements. {t} is the quoted table name; {now} is the
// statement's instant in the type of the time columns, and {nowUp} the same
// instant, from which lock_until is counted (see texts).
//
// "Now" is statement_timestamp(): the instant the server received the
// statement. Not CURRENT_TIMESTAMP or now(): those are the start of the
// transaction and stay there inside one, so a statement sent in a transaction
// opened a while ago would write a lock that ends early, already over if the
// transaction is older than LockAtMostFor (Java ShedLock #3577: two pods held
// one lock 274 ms apart). Not clock_timestamp() either: it moves while the
// statement runs, so the instant compared with lock_until and the one written
// to it could differ. statement_timestamp() is one instant for the whole
// statement, and it is never earlier than the call that sent it, so a lock
// never ends before its holder counts it over.
//
// A duration is a whole number of milliseconds, sent as a number (no string
// per call) and multiplied by a one-millisecond interval: the product has no
// days or months, so adding it to a timestamptz adds exact time, even across a
// daylight saving change in the session's zone.
//
// Acquisition is one statement whether or not the row exists: the INSERT makes
// the row on a name's first use, or after it was deleted by hand, and ON
// CONFLICT takes the existing row only when its lock has run out. It reports
// one row when it took the lock and none when the lock is held.
const (
	acquireSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by{fenceCol}) " +
		"VALUES ($1, {nowUp} + $2::bigint * interval '1 millisecond', {now}, $3{fenceNew}) " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, " +
		"locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by{fenceSet} WHERE l.lock_until <= {now}{fireCond}{pauseCond}" +
		proofSQL + "{fenceRet}"
	// A batch (TryLockBatch) is the same upsert on many rows: the names,
	// tokens and durations come as three array literals, each one text
	// parameter, so that the text is the same for every batch size and one
	// statement prepared (or cached by pgx) serves them all; under pgx's
	// simple protocol the driver quotes each literal as a string. The rows
	// are inserted, and their locks taken, in byte order of name, the one
	// order of every instance, so that two batches never wait on each other in
	// a cycle. It returns the rows it took, with their tokens.
	//
	// A row another transaction holds is skipped, not waited for: the rows
	// that exist are locked first, SKIP LOCKED, and only those and the
	// missing ones go to the upsert. A row an open transaction keeps (an
	// operator's SELECT ... FOR UPDATE) is that member's NotAcquired, not a
	// wait that outlasts every member's deadline; a row another instance's
	// statement holds is one that instance is taking or keeping.
	//
	// A row that does not exist yet cannot be skipped: one another
	// transaction is inserting makes the upsert wait for that transaction.
	// The statement bounds that wait itself, lock_timeout set for its own
	// transaction (set_config's is_local) as b's rows are read, before any
	// row is locked: no round trip more, and nothing that outlives the
	// statement in a session a pooler in transaction mode hands on. A wait
	// that runs out is lock_not_available (55P03), the whole statement rolled
	// back, and the engine makes the attempts one by one.
	batchSQL     = batchWithSQL + batchInsertSQL
	batchWithSQL = "WITH b AS (SELECT * FROM unnest($1::text::text[], $2::text::text[], $3::text::bigint[]) AS b(name, token, ms) " +
		"WHERE set_config('lock_timeout', '" + batchLockWait + "', true) IS NOT NULL), " +
		"free AS (SELECT f.name FROM {t} AS f JOIN b ON f.name = b.name FOR UPDATE OF f SKIP LOCKED) "
	batchInsertSQL = "INSERT INTO {t} AS l (name, lock_until, locked_at, locked_by{fenceCol}) " +
		"SELECT b.name, {nowUp} + b.ms * interval '1 millisecond', {now}, b.token{fenceNew} FROM b " +
		"WHERE b.name IN (SELECT name FROM free) OR NOT EXISTS (SELECT 1 FROM {t} AS x WHERE x.name = b.name) " +
		"ORDER BY b.name COLLATE \"C\" " +
		"ON CONFLICT (name) DO UPDATE SET lock_until = EXCLUDED.lock_until, " +
		"locked_at = EXCLUDED.locked_at, locked_by = EXCLUDED.locked_by{fenceSet} WHERE l.lock_until <= {now}{pauseCond}" +
		proofSQL + "{fenceRet}"
	// The batch statement's wait for a row another transaction is making.
	// As MariaDB's (see the mysql package): long enough for another
	// instance's statement, short enough that an open transaction fails its
	// member alone, well within the acquire timeout.
	batchLockWait = "1s"
	releaseSQL    = "UPDATE {t} SET lock_until = GREATEST(locked_at + $1::bigint * interval '1 millisecond', {now}) " +
		"WHERE name = $2 AND locked_by = $3"
	extendSQL = "UPDATE {t} SET lock_until = {nowUp} + $1::bigint * interval '1 millisecond' " +
		"WHERE name = $2 AND locked_by = $3 AND lock_until > {now}" + proofSQL
	// The row an acquiring or extending statement changed, as proof that it is
	// this table's (tableoid) and this acquisition's (locked_by): a statement run
	// in the wrong session by a pooler can change another's row, and must not
	// become a granted lock.
	proofSQL = " RETURNING tableoid::int8, locked_by::text"

	// With a fence column (migration 0002), the acquisition also writes its
	// fencing token and returns it: the larger of the row's last token + 1
	// and the statement's instant in microseconds since 1970. The first keeps
	// tokens increasing within a microsecond and when the clock steps back; the
	// second across a row deleted by hand, which loses the last token. Java
	// ShedLock, which knows no fence, leaves it as it is; GREATEST ignores the
	// NULL of a row Java inserted.
	fenceCol = ", fence"
	fenceNew = ", (EXTRACT(EPOCH FROM statement_timestamp()) * 1000000)::bigint"
	fenceSet = ", fence = GREATEST(l.fence + 1, EXCLUDED.fence)"
	fenceRet = ", fence"

	// Java ShedLock's columns are timestamp (without time zone) holding UTC
	// wall-clock time: "now" as such, whatever the session's TimeZone. A
	// timestamptz column holds instants, which need no zone.
	nowUTC     = "(statement_timestamp() AT TIME ZONE 'UTC')"
	nowInstant = "statement_timestamp()"

	// First use: the server and session, then the table's columns.
	sessionSQL = "SELECT current_setting('server_version_num')::int, current_setting('server_encoding'), " +
		"current_setting('transaction_read_only') = 'on', pg_is_in_recovery()"
	columnsSQL = "SELECT a.attname, t.typname, a.atttypmod, format_type(a.atttypid, a.atttypmod), " +
		"COALESCE(c.collisdeterministic, true), COALESCE(c.collname, ''), " +
		"COALESCE(quote_ident(n.nspname) || '.' || quote_ident(c.collname), '') " +
		"FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid " +
		"LEFT JOIN pg_collation c ON c.oid = a.attcollation LEFT JOIN pg_namespace n ON n.oid = c.collnamespace " +
		"WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped"
	// The table's oid, which proofSQL returns; and the pooler check's probe.
	tableOIDSQL   = "SELECT to_regclass($1)::oid::int8"
	backendPIDSQL = "SELECT pg_backend_pid()"
	// The spelling of the row a name is, under a nondeterministic collation.
	storedNameSQL = "SELECT name::text FROM {t} WHERE name = $1"
	// For each name of a batch, the first of the batch's names equal to it
	// under the name column's (nondeterministic) collation, {collation}: two
	// new names of one row.
	twinsSQL = "SELECT a.i, min(b.j) FROM unnest($1::text::text[]) WITH ORDINALITY AS a(n, i) " +
		"JOIN unnest($1::text::text[]) WITH ORDINALITY AS b(n, j) ON a.n = b.n COLLATE {collation} GROUP BY a.i"
)

// Indexes of the statements a postgresStore runs.
const (
	pgAcquire = iota
	pgRelease
	pgExtend
	pgBatch
)

// statementTexts returns the statements on table, with "now" in the type of
// time columns that are timestamptz (instant) or timestamp (UTC wall clock);
// with control, the acquisitions refuse a paused job and say so (see
// controlAcquireSQL).
//
// Columns with fewer than 6 fractional digits (millis) round what they store
// to their precision, half a millisecond either way for timestamp(3): a lock
// could end that much early, and a release would leave it held that much
// longer. On such columns each instant is put on the millisecond grid first,
// which every precision from 3 keeps exactly: lock_until is counted from "now"
// rounded up, so that a lock never ends earlier than its LockAtMostFor, and
// everything else uses "now" rounded down, so that a release frees the lock at
// once (LockAtLeastFor, counted from locked_at, may end up to a millisecond
// early).
//
// With fence, the acquisitions write and return the fencing token too.
func statementTexts(table string, instant, millis, fence, control bool) [4]string {
	r := textReplacer(table, instant, millis, fence, control, "")
	acquire, batch := acquireSQL, batchSQL
	if control {
		acquire, batch = controlAcquireSQL, controlBatchSQL
	}
	return [4]string{r.Replace(acquire), r.Replace(releaseSQL), r.Replace(extendSQL), r.Replace(batch)}
}

// textReplacer fills in a statement's placeholders (see statementTexts);
// fireCond is the acquisition's further condition, for CatchUp's.
func textReplacer(table string, instant, millis, fence, control bool, fireCond string) *strings.Replacer {
	now := nowUTC
	if instant {
		now = nowInstant
	}
	nowUp := now
	if millis {
		now, nowUp = "date_trunc('milliseconds', "+now+")",
			"date_trunc('milliseconds', "+now+" + interval '999 microseconds')"
	}
	pairs := []string{"{t}", table, "{now}", now, "{nowUp}", nowUp}
	for _, f := range [][2]string{{"{fenceCol}", fenceCol}, {"{fenceNew}", fenceNew}, {"{fenceSet}", fenceSet},
		{"{fenceRet}", fenceRet}, {"{fenceZero}", fenceZero}} {
		if !fence {
			f[1] = ""
		}
		pairs = append(pairs, f[0], f[1])
	}
	pauseCond := ""
	if control {
		pauseCond = " AND NOT " + pausedOf("l.")
	}
	pairs = append(pairs, "{fireCond}", fireCond, "{pauseCond}", pauseCond, "{paused}", pausedOf(""), "{pausedX}", pausedOf("x."))
	return strings.NewReplacer(pairs...)
}

// CatchUp's statements, on a table with the last_success column (migration
// 0003): the fire time, in milliseconds since 1970, of the lock's last run
// that succeeded. They run only for CatchUp jobs. The acquisition is
// acquireSQL's upsert, taking an existing row on the further condition that
// its recorded fire time is older than the run's ($4), so that a fire time
// that succeeded is never taken again; it makes a missing row itself, so
// AddRow sends nothing. The release is releaseSQL's, and records the run's
// fire time unless a later one is (GREATEST ignores a NULL).
const (
	fireCondSQL    = " AND (l.last_success IS NULL OR l.last_success < $4::bigint)"
	fireReleaseSQL = "UPDATE {t} SET lock_until = GREATEST(locked_at + $1::bigint * interval '1 millisecond', {now}), " +
		"last_success = GREATEST(last_success, $4::bigint) WHERE name = $2 AND locked_by = $3"
	lastFireSQL = "SELECT last_success FROM {t} WHERE name = $1"
)

// Indexes of CatchUp's statements in fireTexts.
const (
	pgFireAcquire = iota
	pgFireRelease
	pgFireLast
)

// fireTexts are CatchUp's statements on table (see statementTexts).
func fireTexts(table string, instant, millis, fence, control bool) [3]string {
	r := textReplacer(table, instant, millis, fence, control, fireCondSQL)
	acquire := acquireSQL
	if control {
		acquire = controlAcquireSQL
	}
	return [3]string{r.Replace(acquire), r.Replace(fireReleaseSQL), r.Replace(lastFireSQL)}
}

// Administration (see Admin). {now} is as above. EXTRACT(EPOCH FROM ...) of a
// timestamp is its seconds since 1970 as a UTC wall clock, and of a timestamptz
// the instant's: times come out as microseconds since 1970 either way, and
// held and left are the database's view, against its clock. A name is matched
// exactly, byte for byte, even under a nondeterministic collation.
const (
	locksSQL = "SELECT name, locked_by, (EXTRACT(EPOCH FROM locked_at) * 1000000)::bigint, " +
		"(EXTRACT(EPOCH FROM lock_until) * 1000000)::bigint, lock_until > {now}, " +
		"GREATEST(EXTRACT(EPOCH FROM lock_until - {now}) * 1000000, 0)::bigint{control} FROM {t}"
	allLocksSQL = locksSQL + " ORDER BY name COLLATE \"C\""
	oneLockSQL  = locksSQL + " WHERE name = $1 AND name COLLATE \"C\" = $1"
	// Frees the row if it is still as read (the same locked_by, locked_at and
	// lock_until: not taken since, nor released) and still held or free as read:
	// the holder's locked_by is replaced, so that its Unlock and Extend find the
	// lock lost.
	forceUnlockSQL = "UPDATE {t} SET lock_until = {now}, locked_by = $1 WHERE name = $2 AND name COLLATE \"C\" = $2 " +
		"AND locked_by = $3 AND (EXTRACT(EPOCH FROM locked_at) * 1000000)::bigint = $4 " +
		"AND (EXTRACT(EPOCH FROM lock_until) * 1000000)::bigint = $5 AND (lock_until > {now}) = $6"
	// The health probe: needs the table, its columns and a session that can
	// write them, and changes nothing.
	probeSQL = "UPDATE {t} SET lock_until = lock_until, locked_at = locked_at, locked_by = locked_by WHERE false"
)
