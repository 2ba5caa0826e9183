package integration_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/migrations"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// fenceTable is one lock table and what the fence tests do to it by hand.
type fenceTable struct {
	newProvider func(t *testing.T) shedlock.LockProvider // a provider on a pool of its own
	exec        func(t *testing.T, stmt string, args ...any)
	quoted      string // the table's name as statements write it
	param       func(i int) string
	// javaAcquire is Java ShedLock's acquiring statement on an existing row,
	// which knows no fence column, and javaArgs its arguments for a name.
	javaAcquire string
	javaArgs    func(name string) []any
}

// fenceStore makes a store's lock table with the fence column (fenced) or
// Java ShedLock's table without it.
type fenceStore struct {
	name  string
	table func(t *testing.T, fenced bool) fenceTable
}

func mysqlFenceStore(params map[string]string) fenceStore {
	name := "MySQL"
	for k, v := range params {
		name += "/" + k + "=" + v
	}
	return fenceStore{name: name, table: func(t *testing.T, fenced bool) fenceTable {
		admin := testdb.Open(t, nil)
		table := testdb.NewTable(t, admin)
		if fenced {
			table = testdb.NewFencedTable(t, admin)
		}
		return fenceTable{
			newProvider: func(t *testing.T) shedlock.LockProvider {
				p, err := shedlock.NewMySQLProvider(testdb.Open(t, params), shedlock.WithTableName(table))
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				return p
			},
			exec:   execOn(admin),
			quoted: table,
			param:  func(int) string { return "?" },
			// Java ShedLock's UPDATE (DESIGN.md), in a session pinned to UTC.
			javaAcquire: "SET STATEMENT time_zone = '+00:00' FOR UPDATE " + table +
				" SET lock_until = TIMESTAMPADD(MICROSECOND, ?, UTC_TIMESTAMP(3)), locked_at = UTC_TIMESTAMP(3), " +
				"locked_by = ? WHERE name = ? AND lock_until <= UTC_TIMESTAMP(3)",
			javaArgs: func(name string) []any { return []any{time.Minute.Microseconds(), "java-pod", name} },
		}
	}}
}

func postgresFenceStore(driver string) fenceStore {
	return fenceStore{name: "PostgreSQL/" + driver, table: func(t *testing.T, fenced bool) fenceTable {
		admin := testdb.OpenPostgres(t, testdb.PGX, nil)
		table := testdb.NewPostgresTable(t, admin)
		if fenced {
			table = testdb.NewFencedPostgresTable(t, admin)
		}
		return fenceTable{
			newProvider: func(t *testing.T) shedlock.LockProvider {
				p, err := shedlock.NewPostgresProvider(testdb.OpenPostgres(t, driver, nil), shedlock.WithTableName(table))
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				return p
			},
			exec:   execOn(admin),
			quoted: table,
			param:  func(i int) string { return fmt.Sprintf("$%d", i) },
			// Java ShedLock 7.9 on PostgreSQL, usingDbTime().
			javaAcquire: "INSERT INTO " + table + "(name, lock_until, locked_at, locked_by) " +
				"VALUES($1, timezone('utc', CURRENT_TIMESTAMP) + make_interval(secs => $2), timezone('utc', CURRENT_TIMESTAMP), $3) " +
				"ON CONFLICT (name) DO UPDATE SET lock_until = timezone('utc', CURRENT_TIMESTAMP) + make_interval(secs => $2), " +
				"locked_at = timezone('utc', CURRENT_TIMESTAMP), locked_by = $3 " +
				"WHERE " + table + ".name = $1 AND " + table + ".lock_until <= timezone('utc', CURRENT_TIMESTAMP)",
			javaArgs: func(name string) []any { return []any{name, 60, "java-pod"} },
		}
	}}
}

var sqliteFenceStore = fenceStore{name: "SQLite", table: func(t *testing.T, fenced bool) fenceTable {
	file := filepath.Join(t.TempDir(), "locks.db")
	admin := openSQLite(t, file, shedlock.SQLiteDSNParams)
	files := []string{"0001_create_shedlock.up.sql"}
	if fenced {
		files = append(files, "0002_add_fence.up.sql")
	}
	for _, f := range files { // as golang-migrate applies them
		b, err := fs.ReadFile(migrations.SQLite, f)
		require.NoError(t, err)
		_, err = admin.Exec(string(b))
		require.NoError(t, err)
	}
	return fenceTable{
		newProvider: func(t *testing.T) shedlock.LockProvider {
			return newSQLiteProvider(t, openSQLite(t, file, shedlock.SQLiteDSNParams))
		},
		exec:   execOn(admin),
		quoted: "shedlock",
		param:  func(int) string { return "?" },
		// Java ShedLock's SQLite statements are its generic SQL ones: an UPDATE
		// of the lock columns alone (the row exists in these tests).
		javaAcquire: "UPDATE shedlock SET lock_until = strftime('%Y-%m-%d %H:%M:%f', 'now', '+' || ? || ' seconds'), " +
			"locked_at = strftime('%Y-%m-%d %H:%M:%f', 'now'), locked_by = ? WHERE name = ? AND lock_until <= strftime('%Y-%m-%d %H:%M:%f', 'now')",
		javaArgs: func(name string) []any { return []any{60, "java-pod", name} },
	}
}}

func execOn(db *sql.DB) func(t *testing.T, stmt string, args ...any) {
	return func(t *testing.T, stmt string, args ...any) {
		t.Helper()
		_, err := db.Exec(stmt, args...)
		require.NoError(t, err, stmt)
	}
}

func fenceStores() []fenceStore {
	return []fenceStore{mysqlFenceStore(nil), mysqlFenceStore(map[string]string{"clientFoundRows": "true"}), postgresFenceStore(testdb.PGX), postgresFenceStore(testdb.LibPQ), sqliteFenceStore}
}

// mustFence takes cfg's lock on p and returns it with its token.
func mustFence(t *testing.T, p shedlock.LockProvider, cfg shedlock.LockConfig) (shedlock.Lock, int64) {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	f, ok := shedlock.FenceOf(l)
	require.True(t, ok, "a lock on a table with the fence column carries a token")
	return l, f
}

// Every acquisition's token is larger than the one before it: by another
// provider, after the lock ran out, after the row was deleted by hand, after a
// Java ShedLock pod took the lock in between; Extend keeps it.
func TestFenceIncreases(t *testing.T) {
	t.Parallel()
	for _, s := range fenceStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tbl := s.table(t, true)
			a, b := tbl.newProvider(t), tbl.newProvider(t)
			cfg := shedlock.LockConfig{Name: "fenced", LockAtMostFor: time.Minute}
			var last int64
			next := func(why string, f int64) {
				t.Helper()
				assert.Greater(t, f, last, "token after %s", why)
				t.Logf("%-34s %d", why, f)
				last = f
			}

			l, f := mustFence(t, a, cfg)
			next("first acquisition", f)
			require.NoError(t, l.Extend(ctx, time.Minute, 0))
			kept, ok := shedlock.FenceOf(l)
			require.True(t, ok)
			assert.Equal(t, f, kept, "Extend keeps the acquisition's token")
			require.NoError(t, l.Unlock(ctx))

			for i := range 5 {
				p := []shedlock.LockProvider{a, b}[i%2]
				l, f = mustFence(t, p, cfg)
				next(fmt.Sprintf("provider %c", "ab"[i%2]), f)
				require.NoError(t, l.Unlock(ctx))
			}

			// A holds with a short lock and never releases: B takes it once it ran out.
			_, f = mustFence(t, a, shedlock.LockConfig{Name: cfg.Name, LockAtMostFor: 100 * time.Millisecond})
			next("a lock left to run out", f)
			var taken shedlock.Lock
			require.Eventually(t, func() bool {
				var err error
				taken, err = b.TryLock(ctx, cfg)
				return err == nil
			}, 10*time.Second, 10*time.Millisecond)
			f, _ = shedlock.FenceOf(taken)
			next("taken over after it ran out", f)
			require.NoError(t, taken.Unlock(ctx))

			// The row deleted by hand: its last token is gone with it.
			tbl.exec(t, "DELETE FROM "+tbl.quoted)
			l, f = mustFence(t, tbl.newProvider(t), cfg)
			next("the row deleted by hand", f)
			require.NoError(t, l.Unlock(ctx))

			// A Java ShedLock pod takes the lock and releases it: the column
			// stays as it was, and the next Go token is still larger.
			tbl.exec(t, tbl.javaAcquire, tbl.javaArgs(cfg.Name)...)
			tbl.exec(t, "UPDATE "+tbl.quoted+" SET lock_until = locked_at WHERE name = "+tbl.param(1), cfg.Name)
			l, f = mustFence(t, b, cfg)
			next("after a Java pod's acquisition", f)
			require.NoError(t, l.Unlock(ctx))

			// A token ahead of the clock, as one written before the database's
			// clock stepped back an hour: the next is still larger.
			// (Deleting the row now would lose it: see the README.)
			last += time.Hour.Microseconds()
			tbl.exec(t, "UPDATE "+tbl.quoted+" SET fence = "+tbl.param(1), last)
			l, f = mustFence(t, a, cfg)
			next("a token an hour ahead of the clock", f)
			require.NoError(t, l.Unlock(ctx))

			// The executor gives the task the same token.
			ex := shedlock.NewExecutor(a)
			t.Cleanup(func() { _ = ex.Stop(ctx) })
			var inTask int64
			ran, err := ex.Run(ctx, cfg, func(ctx context.Context) error {
				var ok bool
				inTask, ok = shedlock.FenceFromContext(ctx)
				if !ok {
					return fmt.Errorf("no fence in the task's context")
				}
				return nil
			})
			require.NoError(t, err)
			require.True(t, ran)
			next("an executor's run", inTask)
		})
	}
}

// On Java ShedLock's table, without the fence column, locks carry no token
// and everything else works as before.
func TestFenceNoneOnJavaTable(t *testing.T) {
	t.Parallel()
	for _, s := range fenceStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tbl := s.table(t, false)
			a, b := tbl.newProvider(t), tbl.newProvider(t)
			cfg := shedlock.LockConfig{Name: "java", LockAtMostFor: time.Minute}
			for range 2 {
				l, err := a.TryLock(ctx, cfg)
				require.NoError(t, err)
				f, ok := shedlock.FenceOf(l)
				assert.False(t, ok, "a token on a table without the column: %d", f)
				assert.Zero(t, f)
				_, err = b.TryLock(ctx, cfg)
				require.ErrorIs(t, err, shedlock.ErrNotAcquired)
				require.NoError(t, l.Extend(ctx, time.Minute, 0))
				require.NoError(t, l.Unlock(ctx))
			}
			ex := shedlock.NewExecutor(b)
			t.Cleanup(func() { _ = ex.Stop(ctx) })
			ran, err := ex.Run(ctx, cfg, func(ctx context.Context) error {
				if f, ok := shedlock.FenceFromContext(ctx); ok {
					return fmt.Errorf("a token in the task's context: %d", f)
				}
				return nil
			})
			require.NoError(t, err)
			require.True(t, ran)
		})
	}
}

// The behaviour suite holds on tables with the fence column too, where every
// lock carries a token.
func TestFenceConformance(t *testing.T) {
	t.Parallel()
	for _, s := range fenceStores() {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.Run(t, func(t *testing.T) shedlocktest.NewProviderFunc { return s.table(t, true).newProvider })
		})
	}
}
