package integration_test

import (
	"context"
	"database/sql"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// adminProvider is what every SQL provider is: a lock provider and an Admin.
type adminProvider interface {
	shedlock.LockProvider
	shedlock.Admin
	LockedBy() string
}

// adminTable is one lock table of one store: pods are providers on it, each
// with a pool of its own, as separate processes would have.
type adminTable struct {
	pod func(t *testing.T) adminProvider
	// exec runs a statement on the table, whose name is {t} in it.
	exec func(t *testing.T, stmt string)
}

// adminStores are the SQL stores, each making a fresh table per test.
func adminStores() map[string]func(t *testing.T) adminTable {
	return map[string]func(t *testing.T) adminTable{
		"mysql":                mysqlAdminTable,
		"sqlite":               sqliteAdminTable,
		"postgres":             postgresAdminTable(pgxClient, ""),
		"postgres-libpq":       postgresAdminTable(libpqClient, ""),
		"postgres-simple":      postgresAdminTable(pgxSimpleClient, ""),
		"postgres-timestamptz": postgresAdminTable(pgxClient, postgresDDL("varchar(64)", "timestamptz", "timestamptz", "varchar(255)")),
	}
}

func mysqlAdminTable(t *testing.T) adminTable {
	db := testdb.Open(t, nil)
	table := testdb.NewTable(t, db)
	return adminTable{
		pod: func(t *testing.T) adminProvider {
			return newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
		},
		exec: func(t *testing.T, stmt string) {
			_, err := db.Exec(strings.ReplaceAll(stmt, "{t}", table))
			require.NoError(t, err)
		},
	}
}

func sqliteAdminTable(t *testing.T) adminTable {
	file := filepath.Join(t.TempDir(), "locks.db")
	open := func(t *testing.T) *sql.DB { return openSQLite(t, file, shedlock.SQLiteDSNParams) }
	require.NoError(t, newSQLiteProvider(t, open(t)).EnsureTable(context.Background()))
	db := open(t)
	return adminTable{
		pod: func(t *testing.T) adminProvider { return newSQLiteProvider(t, open(t)) },
		exec: func(t *testing.T, stmt string) {
			_, err := db.Exec(strings.ReplaceAll(stmt, "{t}", "shedlock"))
			require.NoError(t, err)
		},
	}
}

// forEachAdminStore runs test as a parallel subtest on a fresh table of each store.
func forEachAdminStore(t *testing.T, test func(t *testing.T, tbl adminTable)) {
	for name, newTable := range adminStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newTable(t))
		})
	}
}

// Locks lists every row by name, with the holder each acquisition wrote, the
// times, and whether it is held with how long left.
func TestAdminLocks(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, podA, podB := tbl.pod(t), tbl.pod(t), tbl.pod(t)

		locks, err := admin.Locks(ctx)
		require.NoError(t, err)
		assert.Empty(t, locks, "a new table")

		before := time.Now().UTC().Add(-2 * time.Second) // the database's clock may differ a little
		_, err = podA.TryLock(ctx, shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute})
		require.NoError(t, err)
		released, err := podB.TryLock(ctx, shedlock.LockConfig{Name: "cleanupJob", LockAtMostFor: time.Minute})
		require.NoError(t, err)
		require.NoError(t, released.Unlock(ctx))
		after := time.Now().UTC().Add(2 * time.Second)

		locks, err = admin.Locks(ctx)
		require.NoError(t, err)
		require.Len(t, locks, 2)
		free, held := locks[0], locks[1]

		assert.Equal(t, "cleanupJob", free.Name, "ordered by name")
		assert.True(t, strings.HasPrefix(free.LockedBy, podB.LockedBy()+"."), "holder %q is pod B's token", free.LockedBy)
		assert.False(t, free.Held)
		assert.Zero(t, free.TimeLeft)
		assert.False(t, free.LockUntil.After(after), "released: lock_until is the release time")

		assert.Equal(t, "outboxPollJob", held.Name)
		assert.True(t, strings.HasPrefix(held.LockedBy, podA.LockedBy()+"."), "holder %q is pod A's token", held.LockedBy)
		assert.True(t, held.Held)
		assert.Equal(t, time.UTC, held.LockedAt.Location())
		assert.True(t, held.LockedAt.After(before) && held.LockedAt.Before(after), "locked_at %v is now", held.LockedAt)
		assert.Equal(t, 10*time.Minute, held.LockUntil.Sub(held.LockedAt))
		assert.InDelta(t, 10*time.Minute, held.TimeLeft, float64(5*time.Second))
	})
}

// Held and TimeLeft are the database's view: a MySQL session whose clock reads
// 2001 sees a lock written in real time as held for decades, and a session in
// another time zone sees the same instants as a UTC one.
func TestAdminLocksUseTheDatabaseClock(t *testing.T) {
	t.Parallel()
	db := testdb.Open(t, nil)
	table := testdb.NewTable(t, db)
	ctx := context.Background()
	pod := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	_, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute})
	require.NoError(t, err)

	utc := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	in2001 := newMySQLProvider(t, testdb.Open(t, map[string]string{"timestamp": "1000000000"}), shedlock.WithTableName(table))
	tokyo := newMySQLProvider(t, testdb.Open(t, map[string]string{"time_zone": "'+09:00'"}), shedlock.WithTableName(table))

	want, err := utc.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.InDelta(t, 10*time.Minute, want.TimeLeft, float64(5*time.Second))

	old, err := in2001.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.True(t, old.Held)
	assert.Greater(t, old.TimeLeft, 20*365*24*time.Hour, "time left by a clock that reads 2001")
	assert.Equal(t, want.LockUntil, old.LockUntil, "the stored instant does not depend on the clock")

	east, err := tokyo.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.Equal(t, want.LockedAt, east.LockedAt)
	assert.Equal(t, want.LockUntil, east.LockUntil)
	assert.InDelta(t, want.TimeLeft, east.TimeLeft, float64(5*time.Second))
}

// A lock freed by force while its holder still runs: another pod takes it at
// once, and the holder's Unlock is ErrLockLost and does not touch the new
// holder's lock. ForceUnlock reports the holder it took the lock from.
func TestAdminForceUnlockLiveHolder(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, podA, podB := tbl.pod(t), tbl.pod(t), tbl.pod(t)
		cfg := shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: time.Minute}
		lockA, err := podA.TryLock(ctx, cfg)
		require.NoError(t, err)
		_, err = podB.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrNotAcquired)

		taken, err := admin.ForceUnlock(ctx, cfg.Name)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(taken.LockedBy, podA.LockedBy()+"."), "taken from %q, want pod A", taken.LockedBy)
		assert.True(t, taken.Held, "it was held")

		now, err := admin.Inspect(ctx, cfg.Name)
		require.NoError(t, err)
		assert.Equal(t, shedlock.ForceUnlockedBy, now.LockedBy)
		assert.False(t, now.Held)
		assert.Equal(t, taken.LockedAt, now.LockedAt, "locked_at still says when pod A took it")

		lockB, err := podB.TryLock(ctx, cfg)
		require.NoError(t, err, "pod B takes the freed lock at once")
		require.ErrorIs(t, lockA.Unlock(ctx), shedlock.ErrLockLost, "pod A's Unlock")

		still, err := admin.Inspect(ctx, cfg.Name)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(still.LockedBy, podB.LockedBy()+"."), "pod B still holds it, got %q", still.LockedBy)
		assert.True(t, still.Held)
		require.NoError(t, lockB.Unlock(ctx))
	})
}

// With nobody taking the lock after the force unlock, the holder's Extend and
// Unlock still find it lost, and its Unlock does not hold it again for
// LockAtLeastFor.
func TestAdminForceUnlockThenHolderTouchesIt(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, pod, other := tbl.pod(t), tbl.pod(t), tbl.pod(t)
		cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Minute, LockAtLeastFor: 5 * time.Minute}
		extended, err := pod.TryLock(ctx, cfg)
		require.NoError(t, err)
		_, err = admin.ForceUnlock(ctx, cfg.Name)
		require.NoError(t, err)
		require.ErrorIs(t, extended.Extend(ctx, time.Minute, 0), shedlock.ErrLockLost, "Extend after a force unlock")

		unlocked, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job2", LockAtMostFor: time.Minute, LockAtLeastFor: time.Minute})
		require.NoError(t, err)
		_, err = admin.ForceUnlock(ctx, "job2")
		require.NoError(t, err)
		require.ErrorIs(t, unlocked.Unlock(ctx), shedlock.ErrLockLost, "Unlock after a force unlock")
		info, err := admin.Inspect(ctx, "job2")
		require.NoError(t, err)
		assert.False(t, info.Held, "the holder's Unlock must not hold it again for LockAtLeastFor")
		_, err = other.TryLock(ctx, shedlock.LockConfig{Name: "job2", LockAtMostFor: time.Minute})
		require.NoError(t, err)
	})
}

// A name the table has no row of is ErrLockNotFound, and nothing is written;
// a lock that is not held is freed all the same, and reported as not held.
func TestAdminForceUnlockMissingAndFree(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin, pod := tbl.pod(t), tbl.pod(t)
		for _, name := range []string{"nope", ""} {
			_, err := admin.ForceUnlock(ctx, name)
			require.ErrorIs(t, err, shedlock.ErrLockNotFound, "ForceUnlock(%q)", name)
			_, err = admin.Inspect(ctx, name)
			require.ErrorIs(t, err, shedlock.ErrLockNotFound, "Inspect(%q)", name)
		}
		_, err := admin.ForceUnlock(ctx, "nope")
		assert.Contains(t, err.Error(), `"nope"`, "the message names the lock")
		locks, err := admin.Locks(ctx)
		require.NoError(t, err)
		assert.Empty(t, locks, "no row made for a missing name")

		l, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
		require.NoError(t, err)
		require.NoError(t, l.Unlock(ctx))
		taken, err := admin.ForceUnlock(ctx, "job")
		require.NoError(t, err)
		assert.False(t, taken.Held)
		assert.True(t, strings.HasPrefix(taken.LockedBy, pod.LockedBy()+"."))
		again, err := admin.ForceUnlock(ctx, "job")
		require.NoError(t, err, "a second force unlock")
		assert.Equal(t, shedlock.ForceUnlockedBy, again.LockedBy)
	})
}

// On MySQL a name is matched exactly, not by the name column's collation:
// "JOB" does not find or free the row "job".
func TestAdminMySQLNameIsExact(t *testing.T) {
	t.Parallel()
	tbl := mysqlAdminTable(t)
	ctx := context.Background()
	admin, pod := tbl.pod(t), tbl.pod(t)
	_, err := pod.TryLock(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	for _, name := range []string{"JOB", "job "} {
		_, err = admin.ForceUnlock(ctx, name)
		require.ErrorIs(t, err, shedlock.ErrLockNotFound, "ForceUnlock(%q)", name)
	}
	info, err := admin.Inspect(ctx, "job")
	require.NoError(t, err)
	assert.True(t, info.Held, "still held")
}

// A row written by another client (a Java ShedLock pod writes its host name) is
// listed and freed like any other.
func TestAdminForeignRow(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		admin := tbl.pod(t)
		tbl.exec(t, "INSERT INTO {t} (name, lock_until, locked_at, locked_by) "+
			"VALUES ('javaJob', '2037-01-01 00:00:00.000', '2020-01-01 00:00:00.000', 'java-host')")
		info, err := admin.Inspect(ctx, "javaJob")
		require.NoError(t, err)
		assert.Equal(t, "java-host", info.LockedBy)
		assert.Equal(t, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), info.LockedAt)
		assert.Equal(t, time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC), info.LockUntil)
		assert.True(t, info.Held)
		taken, err := admin.ForceUnlock(ctx, "javaJob")
		require.NoError(t, err)
		assert.Equal(t, "java-host", taken.LockedBy)
		_, err = tbl.pod(t).TryLock(ctx, shedlock.LockConfig{Name: "javaJob", LockAtMostFor: time.Minute})
		require.NoError(t, err)
	})
}

// HealthCheck passes on a usable table, and fails, with a message that says
// why, when the table is missing (before or after first use) or the server
// does not answer.
func TestAdminHealthCheck(t *testing.T) {
	t.Parallel()
	forEachAdminStore(t, func(t *testing.T, tbl adminTable) {
		ctx := context.Background()
		p := tbl.pod(t)
		require.NoError(t, p.HealthCheck(ctx))
		require.NoError(t, p.HealthCheck(ctx), "again, after the first-use checks passed")
		tbl.exec(t, "DROP TABLE {t}")
		err := p.HealthCheck(ctx)
		require.Error(t, err, "table dropped after first use")
		assert.Contains(t, err.Error(), "health check")
		fresh := tbl.pod(t)
		err = fresh.HealthCheck(ctx)
		require.ErrorIs(t, err, shedlock.ErrUnsafeStore, "no table on first use")
		assert.Contains(t, err.Error(), "does not exist")
		// Every way to make the table, for whoever reads it: the service's
		// code, the operator's command, the migration tool.
		dialect, _, _ := strings.Cut(path.Base(t.Name()), "-")
		for _, way := range []string{"EnsureTable", "`shedlock migrate -dsn ... -table ",
			"migrations/" + dialect + "/0001_create_shedlock.up.sql"} {
			assert.Contains(t, err.Error(), way)
		}
	})
}

func TestAdminHealthCheckUnreachable(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/test?timeout=1s")
	require.NoError(t, err)
	defer db.Close()
	p, err := shedlock.NewMySQLProvider(db)
	require.NoError(t, err)
	err = p.HealthCheck(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused")
}

// A SQLite file opened read-only fails the health check: locks could not be
// written.
func TestAdminHealthCheckSQLiteReadOnly(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "locks.db")
	require.NoError(t, newSQLiteProvider(t, openSQLite(t, file, "")).EnsureTable(context.Background()))
	ro := newSQLiteProvider(t, openSQLite(t, file, "mode=ro"))
	_, err := ro.Locks(context.Background())
	require.NoError(t, err, "reading works")
	err = ro.HealthCheck(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "readonly")
}
