package sqlstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/migrations"
)

// The migrations EnsureTable applies to a new table, in order, in each store's
// folder: the first creates the table, every later one adds columns.
var tableMigrations = []string{"0001_create_shedlock.up.sql", "0002_add_fence.up.sql", "0003_add_last_success.up.sql",
	ControlMigration + ".up.sql"}

// DDL returns the CREATE TABLE that makes, under the name table, the table that
// store's migrations (dir is its folder in migrations.FS) make when all are
// applied: the first migration's statement, with the columns every later one
// adds (ALTER TABLE shedlock ADD COLUMN ..., ADD COLUMN ...;, one statement or
// several: SQLite adds one column per ALTER) put before its primary key. A
// table made by it and one made by the migrations have the same columns in the
// same order.
func DDL(dir, table string) (string, error) {
	read := func(name string) (string, error) {
		b, err := migrations.FS.ReadFile(dir + "/" + name)
		if err != nil {
			return "", fmt.Errorf("shedlock: read migration: %w", err)
		}
		return string(b), nil
	}
	ddl, err := read(tableMigrations[0])
	if err != nil {
		return "", err
	}
	const head, key = "CREATE TABLE IF NOT EXISTS shedlock (", "\n  PRIMARY KEY (name)"
	rest, ok := strings.CutPrefix(ddl, head)
	if !ok {
		return "", errors.New("shedlock: migration " + dir + "/" + tableMigrations[0] + " does not start with " + head)
	}
	cols, tail, ok := strings.Cut(rest, key)
	if !ok {
		return "", errors.New("shedlock: migration " + dir + "/" + tableMigrations[0] + " has no line PRIMARY KEY (name)")
	}
	for _, m := range tableMigrations[1:] {
		alter, err := read(m)
		if err != nil {
			return "", err
		}
		defs, err := addedColumns(alter)
		if err != nil {
			return "", fmt.Errorf("shedlock: migration %s/%s: %w", dir, m, err)
		}
		for _, def := range defs {
			cols += "\n  " + def + ","
		}
	}
	return "CREATE TABLE IF NOT EXISTS " + table + " (" + cols + key + tail, nil
}

// addedColumns returns the column definitions of a migration made of
// ALTER TABLE shedlock ADD COLUMN statements, each adding one column or
// several (separated by commas: no definition holds one).
func addedColumns(alter string) ([]string, error) {
	const table, add = "ALTER TABLE shedlock ", "ADD COLUMN "
	var defs []string
	for _, stmt := range strings.Split(alter, ";") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" {
			continue
		}
		rest, ok := strings.CutPrefix(stmt, table)
		if !ok {
			return nil, fmt.Errorf("statement %q is not %s...", stmt, table)
		}
		for _, part := range strings.Split(rest, ",") {
			def, ok := strings.CutPrefix(strings.TrimSpace(part), add)
			if !ok || def == "" {
				return nil, fmt.Errorf("statement %q: %q is not %s...", stmt, part, add)
			}
			defs = append(defs, def)
		}
	}
	if len(defs) == 0 {
		return nil, errors.New("it adds no column")
	}
	return defs, nil
}
