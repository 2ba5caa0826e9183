// Package migrations holds the lock table's DDL for each store, for the migration
// tool a service already runs: golang-migrate or goose.
//
// The table is compatible with Java ShedLock's: a Go service and a Java service can
// share it and exclude each other.
//
// # Layout
//
// Each store has a folder and an [fs.FS] rooted at it ([MySQL], [PostgreSQL],
// [SQLite]). The
// folder holds the same statements twice, in the form each tool reads:
//
//	0001_create_shedlock.up.sql     golang-migrate reads the folder itself
//	0001_create_shedlock.down.sql
//	0002_add_fence.up.sql
//	0002_add_fence.down.sql
//	0003_add_last_success.up.sql
//	0003_add_last_success.down.sql
//	0004_add_control.up.sql
//	0004_add_control.down.sql
//	goose/0001_create_shedlock.sql  goose reads goose/: up and down in one file,
//	goose/0002_add_fence.sql        marked -- +goose Up and -- +goose Down
//	goose/0003_add_last_success.sql
//	goose/0004_add_control.sql
//
// Give goose the goose folder, never the root: there it would read the .up.sql and
// .down.sql files as two migrations of each version and refuse them. A new store is a
// new folder of the same files and one variable below.
//
// # The migrations
//
//   - 0001 creates Java ShedLock's table: name, lock_until, locked_at, locked_by.
//   - 0002 adds the column fence BIGINT (NULL allowed), where the providers write
//     each acquisition's fencing token (see shedlock.FenceOf). It is an ALTER
//     TABLE ... ADD COLUMN without a default, which MySQL 8, MariaDB 10.3,
//     PostgreSQL 11 and SQLite make without rewriting the table. Java ShedLock
//     pods keep working on the table: they neither read nor write the column.
//   - 0003 adds the column last_success BIGINT (NULL allowed), where a job
//     scheduled with shedlock.CatchUp records the fire time, in milliseconds
//     since 1970, of its last run that succeeded, in the statement that
//     releases the run's lock. Jobs without CatchUp never read or write it,
//     and Java ShedLock pods keep working on the table; a table without it
//     refuses CatchUp jobs only, with an error that names this migration.
//   - 0004 adds five columns (NULL allowed), where an operator's pause and
//     run-now requests are kept (shedlock.Controller): paused_at and
//     paused_until (BIGINT, milliseconds since 1970 by the database's clock;
//     a NULL paused_until is a pause until resumed), runs_requested and
//     runs_done (BIGINT counts that only grow; their difference is the runs
//     pending) and runs_done_by (VARCHAR(255), the token of the acquisition
//     that marked a run done last). A provider's acquiring statement refuses
//     a paused job itself, with no statement more. Java ShedLock pods keep
//     working on the table (their INSERT names none of the columns) but do
//     not honour a pause. MySQL and PostgreSQL add the columns in one ALTER
//     TABLE, SQLite in five. A table without them keeps working as before,
//     and pause and run-now fail with an error that names this migration.
//
// A provider looks for the columns when it first uses the table: one that
// started before 0002 ran goes on without tokens until it is made anew or closed
// (Close; its next lock checks the table again), and one that started before
// 0004 ran does not honour a pause until then. Stay at version 1 for a table
// that must keep Java ShedLock's exact columns; locks then carry no token.
//
// # golang-migrate
//
// With github.com/golang-migrate/migrate/v4, its source/iofs package and its
// database/mysql driver (imported for its side effect):
//
//	src, err := iofs.New(migrations.MySQL, ".")
//	if err != nil {
//		return err
//	}
//	m, err := migrate.NewWithSourceInstance("iofs", src,
//		"mysql://app@tcp(db:3306)/app?x-migrations-table=shedlock_schema_migrations")
//	if err != nil {
//		return err
//	}
//	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
//		return err
//	}
//
// # goose
//
// With github.com/pressly/goose/v3:
//
//	dir, err := fs.Sub(migrations.MySQL, "goose")
//	if err != nil {
//		return err
//	}
//	p, err := goose.NewProvider(goose.DialectMySQL, db, dir,
//		goose.WithTableName("shedlock_goose_db_version"))
//	if err != nil {
//		return err
//	}
//	_, err = p.Up(ctx)
//
// With goose's package-level functions instead: goose.SetBaseFS(migrations.MySQL),
// goose.SetDialect("mysql"), goose.SetTableName(...), then goose.Up(db, "goose").
//
// # A version table of its own
//
// These migrations are numbered from 1, like a service's own. Run them with a version
// table of their own, as above (golang-migrate's x-migrations-table, goose's
// WithTableName), so that they and the service's migrations do not take each other's
// versions. Or copy the statements into a migration of the service's own.
//
// # Another table name
//
// The files create a table named shedlock, the name Java ShedLock uses and the
// provider's default. For another name, either let the provider create its table:
//
//	p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName("job_locks"))
//	...
//	err = p.EnsureTable(ctx) // CREATE TABLE IF NOT EXISTS job_locks (...), the columns of every migration
//
// or copy the statements into a migration of the service's own with the name
// changed, and pass that name to WithTableName. EnsureTable creates a missing
// table only: it does not add later migrations' columns to a table that exists.
package migrations

import (
	"embed"
	"io/fs"
)

// FS holds one folder per store ("mysql", "postgres", "sqlite"), laid out as
// the package documentation shows. [MySQL], [PostgreSQL] and [SQLite] are its
// folders.
//
//go:embed */*.sql */goose/*.sql
var FS embed.FS

// MySQL holds the MySQL and MariaDB migrations, for golang-migrate at its root and
// for goose in its goose folder.
var MySQL = dialect("mysql")

// PostgreSQL holds the PostgreSQL migrations, for golang-migrate at its root and
// for goose in its goose folder. The table is Java ShedLock's: lock_until and
// locked_at are timestamp (without time zone) holding UTC.
var PostgreSQL = dialect("postgres")

// SQLite holds the SQLite migrations, for golang-migrate at its root and for goose
// in its goose folder.
var SQLite = dialect("sqlite")

// dialect returns the folder of FS that holds one store's migrations.
func dialect(dir string) fs.FS {
	sub, err := fs.Sub(FS, dir)
	if err != nil {
		panic("migrations: " + err.Error()) // only for a name that is not a valid path
	}
	return sub
}
