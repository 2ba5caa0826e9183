package integration_test

import (
	"context"
	"database/sql"
	"io/fs"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/migrations"
)

// Each test's version table, under a name of its own as the package doc advises.
const migrationVersions = "shedlock_versions"

// migrationCount is how many migrations each store has: 0001 (Java ShedLock's
// table), 0002 (the fence column), 0003 (CatchUp's last_success) and 0004
// (pause and run-now).
const migrationCount = 4

// migrationTool applies a store's migrations up, or all the way down, on a pool
// it may close.
type migrationTool struct {
	name     string
	up, down func(t *testing.T, s migrationStore, db *sql.DB)
}

// golang-migrate reads the store's folder itself.
var golangMigrate = migrationTool{
	name: "GolangMigrate",
	up: func(t *testing.T, s migrationStore, db *sql.DB) {
		m := newMigrate(t, s, db)
		require.NoError(t, m.Up())
		require.ErrorIs(t, m.Up(), migrate.ErrNoChange, "a second Up")
	},
	down: func(t *testing.T, s migrationStore, db *sql.DB) {
		require.NoError(t, newMigrate(t, s, db).Down())
	},
}

func newMigrate(t *testing.T, s migrationStore, db *sql.DB) *migrate.Migrate {
	t.Helper()
	src, err := iofs.New(s.fsys, ".")
	require.NoError(t, err)
	driver, err := s.migrateDriver(db, migrationVersions)
	require.NoError(t, err)
	m, err := migrate.NewWithInstance("iofs", src, s.name, driver)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = m.Close() })
	return m
}

// goose reads the store's goose folder.
var gooseProvider = migrationTool{
	name: "Goose",
	up: func(t *testing.T, s migrationStore, db *sql.DB) {
		results, err := newGoose(t, s, db).Up(context.Background())
		require.NoError(t, err)
		require.Len(t, results, migrationCount)
	},
	down: func(t *testing.T, s migrationStore, db *sql.DB) {
		results, err := newGoose(t, s, db).DownTo(context.Background(), 0)
		require.NoError(t, err)
		require.Len(t, results, migrationCount)
	},
}

func newGoose(t *testing.T, s migrationStore, db *sql.DB) *goose.Provider {
	t.Helper()
	dir, err := fs.Sub(s.fsys, "goose")
	require.NoError(t, err)
	p, err := goose.NewProvider(s.goose, db, dir, goose.WithTableName(migrationVersions))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Each tool, on each store, makes Java ShedLock's table, which the provider then
// locks in, and takes it away again.
func TestMigrations(t *testing.T) {
	t.Parallel()
	for _, s := range []migrationStore{mysqlMigrations, postgresMigrations, sqliteMigrations} {
		for _, tool := range []migrationTool{golangMigrate, gooseProvider} {
			t.Run(tool.name+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				newPool := s.open(t)
				db := newPool()

				tool.up(t, s, newPool())
				assert.Equal(t, s.wantAll(), s.describe(t, db), "table after up")
				assert.True(t, s.tableExists(t, db, migrationVersions), "version table %s after up", migrationVersions)
				s.requireLocks(t, newPool, true)

				tool.down(t, s, newPool())
				assert.False(t, s.tableExists(t, db, "shedlock"), "shedlock after down")
			})
		}
	}
}

// goose refuses a store's root folder, where golang-migrate's two files share a
// version: the reason goose has a folder of its own.
func TestMigrationsGooseRefusesTheRootFolder(t *testing.T) {
	t.Parallel()
	_, err := goose.NewProvider(goose.DialectSQLite3, sqliteMigrations.open(t)(), migrations.SQLite)
	require.ErrorContains(t, err, "duplicate migration version 1")
}

// goose's package-level functions, as the package doc shows them, read the goose
// folder of a store's fs.FS. They set goose's globals, put back at the end: this
// test does not run in parallel, and no other test uses them.
func TestMigrationsGooseGlobalFunctions(t *testing.T) {
	s := sqliteMigrations
	newPool := s.open(t)
	db := newPool()
	t.Cleanup(func() {
		goose.SetBaseFS(nil)
		_ = goose.SetDialect("postgres")
		goose.SetTableName("goose_db_version")
	})

	goose.SetBaseFS(s.fsys)
	require.NoError(t, goose.SetDialect("sqlite3"))
	goose.SetTableName(migrationVersions)

	require.NoError(t, goose.Up(db, "goose"))
	assert.Equal(t, s.wantAll(), s.describe(t, db), "table after up")
	assert.True(t, s.tableExists(t, db, migrationVersions), "version table %s after up", migrationVersions)
	s.requireLocks(t, newPool, true)
	require.NoError(t, goose.DownTo(db, "goose", 0))
	assert.False(t, s.tableExists(t, db, "shedlock"), "shedlock after down")
}

// Version 1 alone is Java ShedLock's table, where locks carry no token; 0002
// adds the fence column, and a provider made after it gives tokens; down to 1
// takes it away again, and locks go on without.
func TestMigrationsFenceStep(t *testing.T) {
	t.Parallel()
	for _, s := range []migrationStore{mysqlMigrations, postgresMigrations, sqliteMigrations} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			newPool := s.open(t)
			db := newPool()
			m := newMigrate(t, s, newPool())

			require.NoError(t, m.Steps(1))
			assert.Equal(t, s.want, s.describe(t, db), "Java ShedLock's table at version 1")
			s.requireLocks(t, newPool, false)

			require.NoError(t, m.Steps(1))
			assert.Equal(t, s.wantFenced(), s.describe(t, db), "the fence column at version 2")
			s.requireLocks(t, newPool, true)

			require.NoError(t, m.Steps(-1))
			assert.Equal(t, s.want, s.describe(t, db), "down to version 1")
			s.requireLocks(t, newPool, false)
		})
	}
}

// EnsureTable makes a new table with the columns of every migration, as the
// tools make it.
func TestMigrationsEnsureTableMatches(t *testing.T) {
	t.Parallel()
	for _, s := range []migrationStore{mysqlMigrations, postgresMigrations, sqliteMigrations} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			newPool := s.open(t)
			db := newPool()
			p, err := s.provider(newPool())
			require.NoError(t, err)
			require.NoError(t, p.(interface{ EnsureTable(context.Context) error }).EnsureTable(context.Background()))
			assert.Equal(t, s.wantAll(), s.describe(t, db))
			s.requireLocks(t, newPool, true)
		})
	}
}

// 0003 adds last_success: a provider made after it takes CatchUp's locks;
// down to 2 takes it away, and a CatchUp take is refused, naming the
// migration, while other locks go on.
func TestMigrationsLastSuccessStep(t *testing.T) {
	t.Parallel()
	for _, s := range []migrationStore{mysqlMigrations, postgresMigrations, sqliteMigrations} {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			newPool := s.open(t)
			db := newPool()
			m := newMigrate(t, s, newPool())
			cfg := shedlock.LockConfig{Name: "caught-up", LockAtMostFor: time.Minute}
			fireLocker := func() shedlock.FireLocker {
				p, err := s.provider(newPool())
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.(interface{ Close() error }).Close() })
				return p.(shedlock.FireLocker)
			}

			require.NoError(t, m.Steps(3))
			assert.Equal(t, s.wantCatchUp(), s.describe(t, db), "last_success at version 3")
			fire := time.Now().Truncate(time.Second)
			l, err := fireLocker().TryLockFire(ctx, cfg, fire)
			require.NoError(t, err)
			require.NoError(t, l.UnlockSucceeded(ctx, 0))

			require.NoError(t, m.Steps(-1))
			assert.Equal(t, s.wantFenced(), s.describe(t, db), "down to version 2")
			_, err = fireLocker().TryLockFire(ctx, cfg, fire.Add(time.Second))
			require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
			require.ErrorContains(t, err, "0003_add_last_success")
			s.requireLocks(t, newPool, true)
		})
	}
}

// 0004 adds the columns of pause and run-now, up and down with each tool:
// before it, locks work and Pause fails naming it; after it, a pause made by
// one provider refuses another's lock, and Java ShedLock's INSERT still
// works; down to 3, the pause goes with its columns and locks go on.
func TestMigrationsControlStep(t *testing.T) {
	t.Parallel()
	type steps struct {
		name     string
		to3, to4 func(t *testing.T, s migrationStore, newPool func() *sql.DB)
		down4To3 func(t *testing.T, s migrationStore, newPool func() *sql.DB)
	}
	ctx := context.Background()
	tools := []steps{
		{
			name: "GolangMigrate",
			to3: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				require.NoError(t, newMigrate(t, s, p()).Steps(3))
			},
			to4: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				require.NoError(t, newMigrate(t, s, p()).Steps(1))
			},
			down4To3: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				require.NoError(t, newMigrate(t, s, p()).Steps(-1))
			},
		},
		{
			name: "Goose",
			to3: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				_, err := newGoose(t, s, p()).UpTo(ctx, 3)
				require.NoError(t, err)
			},
			to4: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				_, err := newGoose(t, s, p()).UpTo(ctx, 4)
				require.NoError(t, err)
			},
			down4To3: func(t *testing.T, s migrationStore, p func() *sql.DB) {
				_, err := newGoose(t, s, p()).DownTo(ctx, 3)
				require.NoError(t, err)
			},
		},
	}
	for _, s := range []migrationStore{mysqlMigrations, postgresMigrations, sqliteMigrations} {
		for _, tool := range tools {
			t.Run(tool.name+"/"+s.name, func(t *testing.T) {
				t.Parallel()
				newPool := s.open(t)
				db := newPool()
				controller := func() shedlock.Controller {
					p, err := s.provider(newPool())
					require.NoError(t, err)
					t.Cleanup(func() { _ = p.(interface{ Close() error }).Close() })
					return p.(shedlock.Controller)
				}
				cfg := shedlock.LockConfig{Name: "paused", LockAtMostFor: time.Minute}

				tool.to3(t, s, newPool)
				assert.Equal(t, s.wantCatchUp(), s.describe(t, db), "version 3")
				err := controller().Pause(ctx, "paused", time.Time{})
				require.ErrorIs(t, err, shedlock.ErrUnsafeStore)
				require.ErrorContains(t, err, "0004_add_control")
				s.requireLocks(t, newPool, true)

				tool.to4(t, s, newPool)
				assert.Equal(t, s.wantAll(), s.describe(t, db), "version 4")
				require.NoError(t, controller().Pause(ctx, "paused", time.Time{}))
				_, err = controller().(shedlock.LockProvider).TryLock(ctx, cfg)
				require.ErrorIs(t, err, shedlock.ErrPaused)
				_, err = db.ExecContext(ctx, s.javaInsert, "java-job")
				require.NoError(t, err, "Java ShedLock's INSERT on version 4")
				s.requireLocks(t, newPool, true)

				tool.down4To3(t, s, newPool)
				assert.Equal(t, s.wantCatchUp(), s.describe(t, db), "down to version 3")
				l, err := controller().(shedlock.LockProvider).TryLock(ctx, cfg)
				require.NoError(t, err, "the pause went with its columns")
				require.NoError(t, l.Unlock(ctx))
				s.requireLocks(t, newPool, true)
			})
		}
	}
}
