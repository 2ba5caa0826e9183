package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// pgClient is a driver and how it is set up: the ways a service reaches
// PostgreSQL through database/sql.
type pgClient struct {
	name   string
	driver string
	params map[string]string
}

var (
	pgxClient = pgClient{name: "PGX", driver: testdb.PGX}
	// As behind a pooler in transaction mode: no prepared statements.
	pgxSimpleClient = pgClient{name: "PGXSimpleProtocol", driver: testdb.PGX,
		params: map[string]string{"default_query_exec_mode": "simple_protocol"}}
	libpqClient = pgClient{name: "LibPQ", driver: testdb.LibPQ}

	pgClients = []pgClient{pgxClient, pgxSimpleClient, libpqClient}
)

// open returns a new pool of the client with extra session settings.
func (c pgClient) open(t testing.TB, settings map[string]string) *sql.DB {
	params := map[string]string{}
	for k, v := range c.params {
		params[k] = v
	}
	for k, v := range settings {
		params[k] = v
	}
	return testdb.OpenPostgres(t, c.driver, params)
}

// pgTestZones are the session TimeZones pods take in turn: far east, a named
// zone with daylight saving time, far west, and the server's own.
var pgTestZones = []string{"+09", "America/New_York", "-12", "UTC"}

// postgresStore makes providers of client c, each with its own pool, on a
// fresh table made from ddl ("" for the documented table). zones, if given,
// are the session TimeZones the pools take in turn.
func postgresStore(c pgClient, ddl string, zones []string, opts ...shedlock.ProviderOption) shedlocktest.NewStoreFunc {
	return func(t *testing.T) shedlocktest.NewProviderFunc {
		admin := testdb.OpenPostgres(t, testdb.PGX, nil)
		table := testdb.NewPostgresTable(t, admin)
		if ddl != "" {
			table = customTable(t, admin, ddl)
		}
		n := 0
		return func(t *testing.T) shedlock.LockProvider {
			var settings map[string]string
			if len(zones) > 0 {
				settings = map[string]string{"TimeZone": zones[n%len(zones)]}
			}
			n++
			return newPostgresProvider(t, c.open(t, settings), append(opts, shedlock.WithTableName(table))...)
		}
	}
}

func newPostgresProvider(t testing.TB, db *sql.DB, opts ...shedlock.ProviderOption) *shedlock.PostgresProvider {
	t.Helper()
	p, err := shedlock.NewPostgresProvider(db, opts...)
	if err != nil {
		t.Fatalf("NewPostgresProvider: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// postgresDDL is the documented table with each column's type given.
func postgresDDL(name, lockUntil, lockedAt, lockedBy string) string {
	return "CREATE TABLE {t} (name " + name + " NOT NULL, lock_until " + lockUntil + " NOT NULL, " +
		"locked_at " + lockedAt + " NOT NULL, locked_by " + lockedBy + " NOT NULL, PRIMARY KEY (name))"
}

func pgRowCount(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM "`+table+`"`).Scan(&n))
	return n
}

func TestPostgresProvider(t *testing.T) {
	t.Parallel()
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.Run(t, postgresStore(c, "", nil))
		})
	}
}

// Pools whose sessions are in different TimeZones take turns as providers:
// every behaviour must hold across them, on Java ShedLock's timestamp columns
// (UTC wall clock) and on timestamptz columns alike.
func TestPostgresProviderMixedTimeZones(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, ddl string }{
		{"Timestamp", ""},
		{"Timestamptz", postgresDDL("varchar(64)", "timestamptz", "timestamptz", "varchar(255)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.Run(t, postgresStore(pgxClient, tc.ddl, pgTestZones))
		})
	}
}

// A +09 pod's 10-minute lock must not look expired to a -12 pod, and the
// stored times are what Java ShedLock writes: UTC wall-clock time in timestamp
// columns, lock_until 10 minutes after locked_at.
func TestPostgresTimeZoneLockNotStolen(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, map[string]string{"TimeZone": "America/New_York"})
	table := testdb.NewPostgresTable(t, admin)
	tokyo := newPostgresProvider(t, pgxClient.open(t, map[string]string{"TimeZone": "+09"}), shedlock.WithTableName(table))
	west := newPostgresProvider(t, libpqClient.open(t, map[string]string{"TimeZone": "-12"}), shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "orderTimeoutCancelJob", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: 30 * time.Second}
	l, err := tokyo.TryLock(context.Background(), cfg)
	require.NoError(t, err, "+09 pod")
	_, err = west.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "-12 pod")

	var ahead, held, lockedAgo float64
	require.NoError(t, admin.QueryRow(`SELECT
			EXTRACT(EPOCH FROM lock_until - (clock_timestamp() AT TIME ZONE 'UTC')),
			EXTRACT(EPOCH FROM lock_until - locked_at),
			EXTRACT(EPOCH FROM (clock_timestamp() AT TIME ZONE 'UTC') - locked_at)
		FROM `+table+` WHERE name = $1`, cfg.Name).Scan(&ahead, &held, &lockedAgo))
	assert.InDelta(t, 600, ahead, 5, "lock_until, read as UTC, is 10 minutes ahead")
	assert.InDelta(t, 600, held, 0.001, "lock_until - locked_at")
	assert.InDelta(t, 0, lockedAgo, 5, "locked_at, read as UTC, is now")
	require.NoError(t, l.Unlock(context.Background()))
	_, err = west.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "released, but within LockAtLeastFor")
}

// A row deleted by hand is re-created by the next acquisition, at once: the
// upsert inserts whatever the provider remembers of the name.
func TestPostgresDeletedRowRecreated(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewPostgresTable(t, admin)
	p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, l.Unlock(context.Background()))
	_, err = admin.Exec("DELETE FROM "+table+" WHERE name = $1", cfg.Name)
	require.NoError(t, err)
	l, err = p.TryLock(context.Background(), cfg)
	require.NoError(t, err, "the next attempt re-creates the row")
	assert.Equal(t, 1, pgRowCount(t, admin, table))
	require.NoError(t, l.Unlock(context.Background()))
}

func TestPostgresBadInput(t *testing.T) {
	t.Parallel()
	_, err := shedlock.NewPostgresProvider(nil)
	require.ErrorIs(t, err, shedlock.ErrInvalidOption)
	assert.Contains(t, err.Error(), "nil *sql.DB")

	// A pool on a port nothing listens on: any statement sent would fail with a
	// connection error, so ErrInvalid... proves none was sent.
	dead, err := sql.Open(testdb.PGX, "postgres://root@127.0.0.1:1/test?sslmode=disable&connect_timeout=1")
	require.NoError(t, err)
	defer dead.Close()
	for _, name := range []string{"", "lock; DROP TABLE x", "1abc", "a.b.c", `"x"`, "a-b", strings.Repeat("t", 64),
		"app." + strings.Repeat("t", 64), "db."} {
		_, err := shedlock.NewPostgresProvider(dead, shedlock.WithTableName(name))
		if !errors.Is(err, shedlock.ErrInvalidOption) || !strings.Contains(err.Error(), "WithTableName") {
			t.Errorf("WithTableName(%q): want ErrInvalidOption, got %v", name, err)
		}
	}
	_, err = shedlock.NewPostgresProvider(dead, shedlock.WithLockedBy(strings.Repeat("o", 256)))
	assert.ErrorIs(t, err, shedlock.ErrInvalidOption, "WithLockedBy(256 bytes)")
	_, err = shedlock.NewPostgresProvider(dead, shedlock.WithTableName("app.Shedlock_"+strings.Repeat("t", 50)))
	assert.NoError(t, err, "schema-qualified table of 63 bytes")

	p := newPostgresProvider(t, dead)
	for _, c := range []shedlock.LockConfig{
		{Name: "", LockAtMostFor: time.Minute},
		{Name: strings.Repeat("n", 65), LockAtMostFor: time.Minute},
		{Name: "job", LockAtMostFor: 600},
		{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: time.Hour},
	} {
		_, err := p.TryLock(context.Background(), c)
		assert.ErrorIs(t, err, shedlock.ErrInvalidConfig, "TryLock(%+v) before any statement", c)
	}
	// A good config on the dead pool does reach the network: the check above is real.
	_, err = p.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.Error(t, err)
	assert.NotErrorIs(t, err, shedlock.ErrInvalidConfig, "good config on a dead pool: a connection error")
}

// The longest time.Duration is a valid LockAtMostFor on PostgreSQL: its
// lock_until, about 292 years on, fits a timestamp (which ends in the year
// 294276), and is stored to the millisecond.
func TestPostgresLongestLockAtMostFor(t *testing.T) {
	t.Parallel()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	table := testdb.NewPostgresTable(t, admin)
	p := newPostgresProvider(t, pgxClient.open(t, nil), shedlock.WithTableName(table))
	q := newPostgresProvider(t, libpqClient.open(t, nil), shedlock.WithTableName(table))
	longest := time.Duration(math.MaxInt64)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: longest}
	require.NoError(t, p.CheckConfig(cfg))
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	_, err = q.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	require.NoError(t, l.Extend(context.Background(), longest, longest))

	var held float64
	require.NoError(t, admin.QueryRow("SELECT EXTRACT(EPOCH FROM lock_until - locked_at) FROM "+table).Scan(&held))
	assert.InDelta(t, longest.Seconds(), held, 600, "lock_until - locked_at after Extend, in seconds")
	require.NoError(t, l.Unlock(context.Background()))
	_, err = q.TryLock(context.Background(), cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "released, but LockAtLeastFor is as long")
}

// waitForLockWait returns the statement that the session named app runs, once
// it waits for a lock held by another transaction.
func waitForLockWait(t *testing.T, admin *sql.DB, app string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var query string
		err := admin.QueryRow("SELECT query FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
			app).Scan(&query)
		if err == nil {
			return query
		}
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s never waited for a lock", app)
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}
