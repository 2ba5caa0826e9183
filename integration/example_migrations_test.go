package integration_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"log"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/pressly/goose/v3"

	"github.com/shedlock-go/shedlock/migrations"
)

// These two are the README's snippets, compiled here; TestMigrations runs the
// same calls against real databases.

// golang-migrate reads a store's folder, with a version table of its own.
func Example_golangMigrate() {
	src, err := iofs.New(migrations.MySQL, ".")
	if err != nil {
		log.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src,
		"mysql://app:secret@tcp(db:3306)/app?x-migrations-table=shedlock_schema_migrations")
	if err != nil {
		log.Fatal(err)
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		log.Fatal(err)
	}
}

// goose reads the store's goose folder, with a version table of its own.
func Example_gooseMigrations() {
	db, err := sql.Open("mysql", "app:secret@tcp(db:3306)/app")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := fs.Sub(migrations.MySQL, "goose")
	if err != nil {
		log.Fatal(err)
	}
	p, err := goose.NewProvider(goose.DialectMySQL, db, dir,
		goose.WithTableName("shedlock_goose_db_version"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := p.Up(context.Background()); err != nil {
		log.Fatal(err)
	}
}
