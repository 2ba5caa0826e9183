package integration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// Lock times rounded to the second would end a lock up to half a second early,
// and free a 600 ms lock at once: such a table is refused on first use, with
// the fix, and nothing is written.
func TestPostgresTableWithoutMillisRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lockUntil, lockedAt, wantFix string
	}{
		{"LockUntilTimestamp0", "timestamp(0)", "timestamp", "ALTER COLUMN lock_until TYPE timestamp"},
		{"LockUntilTimestamp2", "timestamp(2)", "timestamp", "ALTER COLUMN lock_until TYPE timestamp"},
		{"LockedAtTimestamp0", "timestamp", "timestamp(0)", "ALTER COLUMN locked_at TYPE timestamp"},
		{"LockUntilTimestamptz0", "timestamptz(0)", "timestamptz", "ALTER COLUMN lock_until TYPE timestamptz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := customTable(t, admin, postgresDDL("varchar(64)", tc.lockUntil, tc.lockedAt, "varchar(255)"))
			p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
			_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 600 * time.Millisecond})
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			assert.Contains(t, err.Error(), `ALTER TABLE "`+table+`" `+tc.wantFix)
			assert.Zero(t, pgRowCount(t, admin, table), "nothing written")
		})
	}
}

// What must keep working: the column types Java ShedLock's users have, and the
// ones a PostgreSQL user would choose.
func TestPostgresKeepsWorking(t *testing.T) {
	t.Parallel()
	for _, v := range []struct{ name, ddl string }{
		{"JavaDocumentedDDL", "CREATE TABLE {t}(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, " +
			"locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))"},
		{"Timestamp3", postgresDDL("varchar(64)", "timestamp(3)", "timestamp(3)", "varchar(255)")},
		{"Timestamptz", postgresDDL("varchar(64)", "timestamptz", "timestamptz", "varchar(255)")},
		{"TextColumns", postgresDDL("text", "timestamp", "timestamp", "text")},
		{"CharColumns", postgresDDL("char(64)", "timestamp", "timestamp", "char(255)")},
	} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			shedlockRunPostgres(t, v.ddl)
		})
	}
}

func shedlockRunPostgres(t *testing.T, ddl string) {
	t.Helper()
	store := postgresStore(pgxClient, ddl, []string{"+09", "-12"})
	newProvider := store(t)
	a, b := newProvider(t), newProvider(t)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 0}
	l, err := a.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	_, err = b.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, l.Extend(context.Background(), time.Minute, 0))
	require.NoError(t, l.Unlock(context.Background()))
	l, err = b.TryLock(context.Background(), cfg)
	require.NoError(t, err, "after the release")
	require.NoError(t, l.Unlock(context.Background()))
}

// On columns that keep milliseconds, which PostgreSQL rounds to, a released
// lock is free at once for the next pod, and a lock is held for its
// LockAtMostFor from its start, less than a millisecond more, never less.
func TestPostgresMillisecondColumns(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"timestamp(3)", "timestamptz(3)", "timestamp(5)"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := customTable(t, admin, postgresDDL("varchar(64)", kind, kind, "varchar(255)"))
			a := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
			b := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
			const most = 1234 * time.Millisecond
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
			for i := range 50 {
				// epoch reads a time as microseconds since 1970, UTC for timestamp columns.
				epoch := func(expr, from string) time.Duration {
					var us int64
					require.NoError(t, admin.QueryRow("SELECT (EXTRACT(EPOCH FROM "+expr+") * 1000000)::bigint "+from).Scan(&us))
					return time.Duration(us) * time.Microsecond
				}
				before := epoch("statement_timestamp()", "")
				l, err := a.TryLock(context.Background(), cfg)
				require.NoError(t, err, "cycle %d: free at once after the release", i)
				until := epoch("lock_until", "FROM "+table)
				require.GreaterOrEqual(t, until, before+most, "cycle %d: lock_until, after a TryLock that began later", i)
				held := until - epoch("locked_at", "FROM "+table)
				require.LessOrEqual(t, held, most+time.Millisecond, "cycle %d: lock_until - locked_at", i)
				require.NoError(t, l.Unlock(context.Background()))
				a, b = b, a
			}
		})
	}
}

// Time columns of two kinds would compare a UTC wall clock with an instant:
// refused.
func TestPostgresMixedTimeColumnsRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := customTable(t, admin, postgresDDL("varchar(64)", "timestamp", "timestamptz", "varchar(255)"))
	p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "make both timestamp")
}

// A read-only session (a hot standby, or default_transaction_read_only) is an
// error that says so, never a lock: refused on first use, and a statement that
// meets a session turned read-only later says so too.
func TestPostgresReadOnlySessionRefused(t *testing.T) {
	t.Parallel()
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := testdb.NewPostgresTable(t, admin)
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

			p := newPostgresProvider(t, c.open(t, map[string]string{"default_transaction_read_only": "on"}),
				shedlock.WithTableName(table))
			_, err := p.TryLock(context.Background(), cfg)
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			assert.Contains(t, err.Error(), "read-only")

			// First use on a writable session, which then turns read-only.
			db := c.open(t, nil)
			db.SetMaxOpenConns(1)
			p = newPostgresProvider(t, db, shedlock.WithTableName(table))
			l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "other", LockAtMostFor: time.Minute})
			require.NoError(t, err)
			_, err = db.Exec("SET default_transaction_read_only = on")
			require.NoError(t, err)
			_, err = p.TryLock(context.Background(), cfg)
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			assert.Contains(t, err.Error(), "read-only")
			err = l.Unlock(context.Background())
			require.ErrorIs(t, err, shedlock.ErrReleaseFailed)
			assert.Contains(t, err.Error(), "read-only")
			assert.Equal(t, 1, pgRowCount(t, admin, table), "only the lock taken while writable")
		})
	}
}

// A name the name column would not store as given is refused before any row
// is written, naming the lock and the column; what it can store works.
func TestPostgresNameTheColumnCannotStoreRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		test, nameType, lockName, want string
	}{
		{"TooLongForVarchar10", "varchar(10)", "orderTimeoutCancelJob", "at most 10 characters"},
		// PostgreSQL itself would cut these trailing spaces and store "0123456789".
		{"SpacesPastVarchar10", "varchar(10)", "0123456789  ", "at most 10 characters"},
		{"TrailingSpaceInChar", "char(64)", "job ", "trailing spaces"},
		{"NUL", "varchar(64)", "job\x00", "NUL"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := customTable(t, admin, postgresDDL(tc.nameType, "timestamp", "timestamp", "varchar(255)"))
			p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
			_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: tc.lockName, LockAtMostFor: time.Minute})
			require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
			assert.Contains(t, err.Error(), `lock "`+strings.ReplaceAll(tc.lockName, "\x00", `\x00`)+`"`)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, pgRowCount(t, admin, table), "nothing written")
		})
	}
	for _, tc := range []struct{ test, nameType, lockName string }{
		{"TenInVarchar10", "varchar(10)", "0123456789"},
		{"HangulInVarchar4", "varchar(4)", "주문취소"},
		{"EmojiInText", "text", "job🔥"},
		{"CaseInChar", "char(8)", "JOB"},
	} {
		t.Run(tc.test, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := customTable(t, admin, postgresDDL(tc.nameType, "timestamp", "timestamp", "varchar(255)"))
			p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
			q := newPostgresProvider(t, libpqClient.open(t, nil), shedlock.WithTableName(table))
			cfg := shedlock.LockConfig{Name: tc.lockName, LockAtMostFor: time.Minute}
			l, err := p.TryLock(context.Background(), cfg)
			require.NoError(t, err)
			_, err = q.TryLock(context.Background(), cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			var stored string
			require.NoError(t, admin.QueryRow("SELECT name::text FROM "+table).Scan(&stored))
			assert.Equal(t, tc.lockName, stored)
			require.NoError(t, l.Unlock(context.Background()))
		})
	}
}

// A locked_by column that cannot hold the provider's owner exactly could make
// two owners one: refused on first use.
func TestPostgresLockedByColumnRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	narrow := customTable(t, admin, postgresDDL("varchar(64)", "timestamp", "timestamp", "varchar(20)"))
	p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(narrow))
	_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "locked_by character varying(20) is too short")
	assert.Zero(t, pgRowCount(t, admin, narrow))
}

// A table that is missing, lacks a column or its primary key, or has a column
// of another kind is an error that says so.
func TestPostgresMissingTableOrColumnRefused(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName("shedlock_no_such_table"))
	_, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "does not exist")

	table := customTable(t, admin, "CREATE TABLE {t} (name varchar(64) PRIMARY KEY, lock_until timestamp NOT NULL, locked_by varchar(255) NOT NULL)")
	p = newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "has no column locked_at")

	// Without a unique key on name, the upsert has no conflict to take: the
	// server refuses every acquisition, and no row is written.
	table = customTable(t, admin, "CREATE TABLE {t} (name varchar(64) NOT NULL, lock_until timestamp NOT NULL, "+
		"locked_at timestamp NOT NULL, locked_by varchar(255) NOT NULL)")
	p = newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ON CONFLICT")
	assert.Zero(t, pgRowCount(t, admin, table))

	table = customTable(t, admin, postgresDDL("varchar(64)", "date", "date", "varchar(255)"))
	p = newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
	assert.Contains(t, err.Error(), "column lock_until date, want one of timestamp, timestamptz")
}

// A table in a schema of its own, under a name with capitals: quoted, it is
// found as given, and EnsureTable creates it there.
func TestPostgresSchemaQualifiedTable(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	schema := "shedlock_s_" + randomHex(4)
	_, err := admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE") })
	opt := shedlock.WithTableName(schema + ".Job_Locks")
	p := newPostgresProvider(t, pgxClient.open(t, nil), opt)
	require.NoError(t, p.EnsureTable(context.Background()))
	require.NoError(t, p.EnsureTable(context.Background()), "a second time")
	q := newPostgresProvider(t, libpqClient.open(t, nil), opt)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	_, err = q.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, l.Unlock(context.Background()))
	var n int
	// Folded as PostgreSQL folds unquoted names: the table Java's unquoted
	// statements name Job_Locks.
	require.NoError(t, admin.QueryRow(`SELECT COUNT(*) FROM `+schema+`.Job_Locks`).Scan(&n))
	assert.Equal(t, 1, n)
}

// pgCaseInsensitive is an ICU collation that PostgreSQL compares
// nondeterministically: "job" and "JOB" are equal, one row.
const pgCaseInsensitive = "shedlock_test_ci"

func createCaseInsensitiveCollation(t *testing.T) {
	t.Helper()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	_, err := admin.Exec("CREATE COLLATION IF NOT EXISTS " + pgCaseInsensitive +
		" (provider = icu, locale = 'und-u-ks-level2', deterministic = false)")
	if err != nil && !strings.Contains(err.Error(), "already exists") { // a parallel test made it
		require.NoError(t, err, "this server has no ICU")
	}
}

// Under a nondeterministic collation, names it makes equal are one row: one
// provider refuses the second spelling, an old handle of one spelling never
// releases another's newer acquisition, and the others stay distinct rows.
func TestPostgresNondeterministicCollation(t *testing.T) {
	t.Parallel()
	createCaseInsensitiveCollation(t)
	ddl := postgresDDL("varchar(64) COLLATE "+pgCaseInsensitive, "timestamp", "timestamp", "varchar(255)")

	t.Run("SecondSpellingRefused", func(t *testing.T) {
		t.Parallel()
		admin := testdb.OpenPostgres(t, testdb.PGX, nil)
		table := customTable(t, admin, ddl)
		p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
		l, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		require.NoError(t, err)
		_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "JOB", LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "same row")
		_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "jobs", LockAtMostFor: time.Minute})
		require.NoError(t, err, "a name that differs by more than case")
		require.NoError(t, l.Unlock(context.Background()))

		// A row another pod made, under a spelling this provider never used.
		_, err = admin.Exec("INSERT INTO " + table + " VALUES ('Report', '2000-01-01', '2000-01-01', 'java-pod')")
		require.NoError(t, err)
		_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
		require.NoError(t, err)
		_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "REPORT", LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrInvalidConfig)
	})
	t.Run("LateUnlockAcrossSpellings", func(t *testing.T) {
		t.Parallel()
		admin := testdb.OpenPostgres(t, testdb.PGX, nil)
		table := customTable(t, admin, ddl)
		// Past their first use, with its checks, before a's short lock is taken.
		a := warmProvider(t, newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table)))
		b := warmProvider(t, newPostgresProvider(t, libpqClient.open(t, nil), shedlock.WithTableName(table)))
		c := warmProvider(t, newPostgresProvider(t, pgxSimpleClient.open(t, nil), shedlock.WithTableName(table)))

		old, err := a.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 300 * time.Millisecond})
		require.NoError(t, err)
		_, err = b.TryLock(context.Background(), shedlock.LockConfig{Name: "JOB", LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "the same row, held")
		// a's lock runs out; b takes the same row under another spelling.
		newer := lockEventually(t, b, shedlock.LockConfig{Name: "JOB", LockAtMostFor: time.Minute}, 5*time.Second)
		require.ErrorIs(t, old.Unlock(context.Background()), shedlock.ErrLockLost)
		require.ErrorIs(t, old.Extend(context.Background(), time.Minute, 0), shedlock.ErrLockLost)
		_, err = c.TryLock(context.Background(), shedlock.LockConfig{Name: "Job", LockAtMostFor: time.Minute})
		require.ErrorIs(t, err, shedlock.ErrNotAcquired, "b's newer lock must still hold")
		require.NoError(t, newer.Unlock(context.Background()))
		assert.Equal(t, 2, pgRowCount(t, admin, table), "one row for every spelling of job, one for the warm-up")
	})
}

// Pods that start together all call EnsureTable on a table that does not exist
// yet: PostgreSQL fails all but one CREATE TABLE IF NOT EXISTS racing for the
// same name (a duplicate key in pg_type), and EnsureTable must still succeed on
// every pod.
func TestPostgresEnsureTableConcurrently(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	const pods, rounds = 4, 10
	providers := make([]*shedlock.PostgresProvider, pods)
	for round := range rounds {
		table := "shedlock_e_" + randomHex(4)
		t.Cleanup(func() { _, _ = admin.Exec("DROP TABLE IF EXISTS " + table) })
		for i := range providers {
			providers[i] = newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
		}
		start := make(chan struct{})
		errs := make(chan error, pods)
		for _, p := range providers {
			go func() {
				<-start
				errs <- p.EnsureTable(context.Background())
			}()
		}
		close(start)
		for range pods {
			require.NoError(t, <-errs, "round %d", round)
		}
	}
}
