package integration_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/golang-migrate/migrate/v4/database"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	migratepostgres "github.com/golang-migrate/migrate/v4/database/postgres"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/migrations"
)

// migrationStore is one store's migrations and how the tests reach a fresh
// database of that store.
type migrationStore struct {
	name  string
	fsys  fs.FS
	goose goose.Dialect
	// migrateDriver wraps a pool for golang-migrate, with the version table given.
	migrateDriver func(db *sql.DB, versionTable string) (database.Driver, error)
	// open gives the test a database of its own, empty, and returns a function
	// that opens a new pool on it (the tools close the pool they are given).
	open func(t *testing.T) func() *sql.DB
	// describe lists what a Java-compatible table must be: for MySQL its engine
	// and character set, then for each column "name type NOT NULL [key] [default]".
	describe    func(t *testing.T, db *sql.DB) []string
	want        []string // after 0001: Java ShedLock's table
	fence       string   // the column 0002 adds, as describe shows it
	lastSuccess string   // the column 0003 adds
	control     []string // the columns 0004 adds
	// javaInsert is Java ShedLock's INSERT into the table, a lock of one
	// minute on the name given.
	javaInsert  string
	tableExists func(t *testing.T, db *sql.DB, table string) bool
	provider    func(db *sql.DB) (shedlock.LockProvider, error)
}

var mysqlMigrations = migrationStore{
	name:  "MySQL",
	fsys:  migrations.MySQL,
	goose: goose.DialectMySQL,
	migrateDriver: func(db *sql.DB, versionTable string) (database.Driver, error) {
		return migratemysql.WithInstance(db, &migratemysql.Config{MigrationsTable: versionTable})
	},
	open: openMySQLDatabase,
	describe: func(t *testing.T, db *sql.DB) []string {
		table := queryStrings(t, db, `SELECT CONCAT('ENGINE=', ENGINE,
				' CHARSET=', SUBSTRING_INDEX(TABLE_COLLATION, '_', 1))
			FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'shedlock'`)
		return append(table, queryStrings(t, db, `SELECT CONCAT_WS(' ', COLUMN_NAME, COLUMN_TYPE,
				IF(IS_NULLABLE = 'NO', 'NOT NULL', 'NULL'), NULLIF(COLUMN_KEY, ''),
				CONCAT('DEFAULT ', LOWER(COLUMN_DEFAULT)))
			FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'shedlock' ORDER BY ORDINAL_POSITION`)...)
	},
	// Java ShedLock's table, as DESIGN.md gives it.
	want: []string{
		"ENGINE=InnoDB CHARSET=utf8mb4",
		"name varchar(64) NOT NULL PRI",
		"lock_until timestamp(3) NOT NULL",
		"locked_at timestamp(3) NOT NULL DEFAULT current_timestamp(3)",
		"locked_by varchar(255) NOT NULL",
	},
	fence:       "fence bigint(20) NULL DEFAULT null",
	lastSuccess: "last_success bigint(20) NULL DEFAULT null",
	control: []string{"paused_at bigint(20) NULL DEFAULT null", "paused_until bigint(20) NULL DEFAULT null",
		"runs_requested bigint(20) NULL DEFAULT null", "runs_done bigint(20) NULL DEFAULT null",
		"runs_done_by varchar(255) NULL DEFAULT null"},
	javaInsert: "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) " +
		"VALUES (?, TIMESTAMPADD(MINUTE, 1, UTC_TIMESTAMP(3)), UTC_TIMESTAMP(3), 'java-pod')",
	tableExists: func(t *testing.T, db *sql.DB, table string) bool {
		var n int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?`, table).Scan(&n))
		return n == 1
	},
	provider: func(db *sql.DB) (shedlock.LockProvider, error) { return shedlock.NewMySQLProvider(db) },
}

var postgresMigrations = migrationStore{
	name:  "PostgreSQL",
	fsys:  migrations.PostgreSQL,
	goose: goose.DialectPostgres,
	migrateDriver: func(db *sql.DB, versionTable string) (database.Driver, error) {
		return migratepostgres.WithInstance(db, &migratepostgres.Config{MigrationsTable: versionTable})
	},
	open: openPostgresDatabase,
	describe: func(t *testing.T, db *sql.DB) []string {
		cols := queryStrings(t, db, `SELECT a.attname || ' ' || format_type(a.atttypid, a.atttypmod) ||
				CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
				COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
			FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE a.attrelid = 'shedlock'::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`)
		return append(cols, queryStrings(t, db, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = 'shedlock'::regclass AND contype IN ('p', 'u')`)...)
	},
	// Java ShedLock's documented table: UTC wall-clock times in timestamp columns.
	want: []string{
		"name character varying(64) NOT NULL",
		"lock_until timestamp without time zone NOT NULL",
		"locked_at timestamp without time zone NOT NULL",
		"locked_by character varying(255) NOT NULL",
		"PRIMARY KEY (name)",
	},
	fence:       "fence bigint",
	lastSuccess: "last_success bigint",
	control: []string{"paused_at bigint", "paused_until bigint", "runs_requested bigint", "runs_done bigint",
		"runs_done_by character varying(255)"},
	javaInsert: "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) " +
		"VALUES ($1, now() AT TIME ZONE 'UTC' + interval '1 minute', now() AT TIME ZONE 'UTC', 'java-pod')",
	tableExists: func(t *testing.T, db *sql.DB, table string) bool {
		var ok bool
		require.NoError(t, db.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, table).Scan(&ok))
		return ok
	},
	provider: func(db *sql.DB) (shedlock.LockProvider, error) { return shedlock.NewPostgresProvider(db) },
}

var sqliteMigrations = migrationStore{
	name:  "SQLite",
	fsys:  migrations.SQLite,
	goose: goose.DialectSQLite3,
	migrateDriver: func(db *sql.DB, versionTable string) (database.Driver, error) {
		return migratesqlite.WithInstance(db, &migratesqlite.Config{MigrationsTable: versionTable})
	},
	open: func(t *testing.T) func() *sql.DB {
		file := filepath.Join(t.TempDir(), "app.db")
		return func() *sql.DB { return openSQLite(t, file, shedlock.SQLiteDSNParams) }
	},
	describe: func(t *testing.T, db *sql.DB) []string {
		return queryStrings(t, db, `SELECT name || ' ' || type || IIF("notnull", ' NOT NULL', '') ||
				IIF(pk > 0, ' PRIMARY KEY', '') || IIF(dflt_value IS NULL, '', ' DEFAULT ' || dflt_value)
			FROM pragma_table_info('shedlock') ORDER BY cid`)
	},
	want: []string{
		"name VARCHAR(64) NOT NULL PRIMARY KEY",
		"lock_until TEXT NOT NULL",
		"locked_at TEXT NOT NULL DEFAULT strftime('%Y-%m-%d %H:%M:%f', 'now')",
		"locked_by VARCHAR(255) NOT NULL",
	},
	fence:       "fence BIGINT",
	lastSuccess: "last_success BIGINT",
	control: []string{"paused_at BIGINT", "paused_until BIGINT", "runs_requested BIGINT", "runs_done BIGINT",
		"runs_done_by VARCHAR(255)"},
	javaInsert: "INSERT INTO shedlock (name, lock_until, locked_at, locked_by) VALUES " +
		"(?, strftime('%Y-%m-%d %H:%M:%f', 'now', '+1 minute'), strftime('%Y-%m-%d %H:%M:%f', 'now'), 'java-pod')",
	tableExists: func(t *testing.T, db *sql.DB, table string) bool {
		var n int
		require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`,
			table).Scan(&n))
		return n == 1
	},
	provider: func(db *sql.DB) (shedlock.LockProvider, error) { return shedlock.NewSQLiteProvider(db) },
}

// openMySQLDatabase creates a database no other test uses, dropped when t ends.
func openMySQLDatabase(t *testing.T) func() *sql.DB {
	admin := testdb.Open(t, nil)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "shedlock_mig_" + hex.EncodeToString(b[:])
	_, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	cfg, err := mysql.ParseDSN(testdb.MySQLDSN(t))
	require.NoError(t, err)
	cfg.DBName = name
	return func() *sql.DB {
		db, err := sql.Open("mysql", cfg.FormatDSN())
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
}

// openPostgresDatabase creates a database no other test uses, dropped when t ends.
func openPostgresDatabase(t *testing.T) func() *sql.DB {
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "shedlock_mig_" + hex.EncodeToString(b[:])
	_, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(testdb.PostgresDSN(t))
	require.NoError(t, err)
	u.Path = "/" + name
	return func() *sql.DB {
		db, err := sql.Open(testdb.PGX, u.String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
}

func queryStrings(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		out = append(out, s)
	}
	require.NoError(t, rows.Err())
	return out
}

// wantFenced is want with the fence column of 0002, the last column (in
// PostgreSQL's list, before the key).
func (s migrationStore) wantFenced() []string {
	out := slices.Clone(s.want)
	at := len(out)
	if s.name == "PostgreSQL" {
		at--
	}
	return slices.Insert(out, at, s.fence)
}

// wantCatchUp is want with the columns of 0002 and 0003: fence, then
// last_success.
func (s migrationStore) wantCatchUp() []string {
	out := s.wantFenced()
	at := len(out)
	if s.name == "PostgreSQL" {
		at--
	}
	return slices.Insert(out, at, s.lastSuccess)
}

// wantAll is want with the columns of every migration: 0002's fence, 0003's
// last_success, then 0004's control columns.
func (s migrationStore) wantAll() []string {
	out := s.wantCatchUp()
	at := len(out)
	if s.name == "PostgreSQL" {
		at--
	}
	return slices.Insert(out, at, s.control...)
}

// requireLocks shows that the store's provider, with its default table, takes and
// releases locks in the migrated table and refuses a second holder; their
// locks carry fencing tokens if and only if fenced.
func (s migrationStore) requireLocks(t *testing.T, newPool func() *sql.DB, fenced bool) {
	t.Helper()
	ctx := context.Background()
	newProvider := func() shedlock.LockProvider {
		p, err := s.provider(newPool())
		require.NoError(t, err)
		if c, ok := p.(interface{ Close() error }); ok {
			t.Cleanup(func() { _ = c.Close() })
		}
		return p
	}
	a, b := newProvider(), newProvider()
	cfg := shedlock.LockConfig{Name: "migrated", LockAtMostFor: time.Minute}

	lock, err := a.TryLock(ctx, cfg)
	require.NoError(t, err, "first lock on the migrated table")
	first, ok := shedlock.FenceOf(lock)
	require.Equal(t, fenced, ok, "a fencing token")
	_, err = b.TryLock(ctx, cfg)
	require.ErrorIs(t, err, shedlock.ErrNotAcquired, "a second holder while the first holds it")
	require.NoError(t, lock.Unlock(ctx))
	lock, err = b.TryLock(ctx, cfg)
	require.NoError(t, err, "lock after the release")
	if second, ok := shedlock.FenceOf(lock); fenced {
		require.True(t, ok)
		require.Greater(t, second, first, "the next acquisition's token")
	}
	require.NoError(t, lock.Unlock(ctx))
}
