package shedlock

import (
	"database/sql"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
	"github.com/shedlock-go/shedlock/internal/sqlstore/mysql"
)

// MySQLProvider takes locks in a MySQL or MariaDB table (see migrations/mysql).
// It is safe for concurrent use. Its statements run in autocommit on the
// *sql.DB, never in a caller's transaction.
//
// On first use it checks the server and the table, and refuses, with an error
// wrapping ErrUnsafeStore that says what to change, what would break mutual
// exclusion: sessions with autocommit off, lock_until or locked_at columns
// without milliseconds, a server that cannot pin the time zone of a statement.
// On the first use of each name it checks that the name column stores the name
// exactly (its length, character set and collation), so that no two names share
// a row unnoticed. A LockAtMostFor whose lock_until a TIMESTAMP cannot hold
// (past January 2038, less a day for clock skew) is ErrInvalidConfig.
//
// The root package imports no driver: import github.com/go-sql-driver/mysql.
type MySQLProvider struct{ sqlProvider }

var (
	_ Admin        = (*MySQLProvider)(nil)
	_ Controller   = (*MySQLProvider)(nil)
	_ RunRequester = (*MySQLProvider)(nil)
)

// NewMySQLProvider returns a provider on db. It does not touch the database: the
// server is probed and statements prepared on the first lock attempt, so a
// service can start while its database is down.
func NewMySQLProvider(db *sql.DB, opts ...ProviderOption) (*MySQLProvider, error) {
	p, err := newSQLProvider("NewMySQLProvider", db, opts, func(o providerOptions) (sqlstore.Store, error) {
		return mysql.New(db, o.table, o.lockedBy)
	})
	if err != nil {
		return nil, err
	}
	return closeWhenGone(&MySQLProvider{p}, p), nil
}
