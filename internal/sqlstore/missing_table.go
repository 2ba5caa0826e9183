package sqlstore

import (
	"fmt"

	"github.com/shedlock-go/shedlock/internal/lockerr"
)

// MissingTable is the first-use error of a lock table that does not exist. It
// wraps lockerr.UnsafeStore, as every table a provider cannot use does, and
// names the three ways to make the table, since whoever reads it may be
// running the service, the command or the migrations: EnsureTable, the
// command's migrate, and the dialect's migration files. where says more of
// where it was looked for (" in the connection's database"), or is "".
func MissingTable(dialect, table, where string) error {
	return fmt.Errorf("%w: table %s does not exist%s: create it with the provider's EnsureTable, "+
		"with the command `shedlock migrate -dsn ... -table %s`, or with your migration tool from "+
		"migrations/%s/0001_create_shedlock.up.sql and 0002_add_fence.up.sql",
		lockerr.UnsafeStore, table, where, table, dialect)
}
