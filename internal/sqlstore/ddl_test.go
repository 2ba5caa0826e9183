package sqlstore

import (
	"strings"
	"testing"
)

// EnsureTable's DDL has every column of every migration, in each store's
// folder, whether a migration adds its columns with one ALTER or one per
// column (SQLite).
func TestDDLHasEveryMigrationsColumns(t *testing.T) {
	for _, dir := range []string{"mysql", "postgres", "sqlite"} {
		ddl, err := DDL(dir, "job_locks")
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if !strings.HasPrefix(ddl, "CREATE TABLE IF NOT EXISTS job_locks (") {
			t.Errorf("%s: %s", dir, ddl)
		}
		for _, c := range append([]string{"fence", LastSuccessColumn}, ControlColumns...) {
			kind := " BIGINT"
			if c == RunsDoneByColumn {
				kind = " VARCHAR(255)"
			}
			if !strings.Contains(ddl, "\n  "+c+kind) {
				t.Errorf("%s: no column %s%s in\n%s", dir, c, kind, ddl)
			}
		}
		if strings.Count(ddl, "PRIMARY KEY") != 1 || strings.Contains(ddl, "ALTER") {
			t.Errorf("%s:\n%s", dir, ddl)
		}
	}
}

// A migration that is not made of ADD COLUMN statements is refused, not
// half read.
func TestAddedColumnsRefusesOtherStatements(t *testing.T) {
	for _, bad := range []string{
		"ALTER TABLE shedlock DROP COLUMN fence;",
		"ALTER TABLE other ADD COLUMN fence BIGINT;",
		"ALTER TABLE shedlock ADD COLUMN a BIGINT, DROP COLUMN b;",
		"",
	} {
		if defs, err := addedColumns(bad); err == nil {
			t.Errorf("%q: read as %q", bad, defs)
		}
	}
	defs, err := addedColumns("ALTER TABLE shedlock ADD COLUMN a BIGINT NULL,\n  ADD COLUMN b BIGINT NULL;\n")
	if err != nil || strings.Join(defs, "|") != "a BIGINT NULL|b BIGINT NULL" {
		t.Errorf("got %q, %v", defs, err)
	}
}
