package sqlstore

import (
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// MissingTable is the first-use error of a lock table that does not exist. It
// wraps lockerr.UnsafeStore, as every table a provider cannot use does, and
// names the three ways to make the table, since whoever reads it may be
// running the service, the command or the migrations: EnsureTable, the
// command's migrate, and the dialect's migration files, every one of them in
// order: a table made from the first ones alone would be refused again later
// (CatchUp needs the last). where says more of
// where it was looked for (" in the connection's database"), or is "".
func MissingTable(dialect, table, where string) error {
	return fmt.Errorf("%w: table %s does not exist%s: create it with the provider's EnsureTable, "+
		"with the command `shedlock migrate -dsn ... -table %s`, or with your migration tool from "+
		"migrations/%s/%s, in order",
		lockerr.UnsafeStore, table, where, table, dialect, strings.Join(tableMigrations, ", "))
}
