package sqlstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// The missing-table error names every migration a table needs, up to the
// last: one made from the first two alone is refused again at CatchUp's first
// check, for want of migration 0003's column.
func TestMissingTableNamesEveryMigration(t *testing.T) {
	err := MissingTable("mysql", "shedlock", "")
	if !errors.Is(err, lockerr.UnsafeStore) {
		t.Fatalf("not ErrUnsafeStore: %v", err)
	}
	if !strings.Contains(err.Error(), "migrations/mysql/0001_create_shedlock.up.sql") {
		t.Errorf("the first migration without its folder: %v", err)
	}
	for _, m := range tableMigrations {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%s not named: %v", m, err)
		}
	}
}
