package shedlock

import (
	"database/sql"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
	"github.com/shedlock-go/shedlock/internal/sqlstore/postgres"
)

// PostgresProvider takes locks in a PostgreSQL table (see migrations/postgres),
// Java ShedLock's: lock_until and locked_at are timestamp (without time zone)
// holding UTC, so Go and Java pods on one table exclude each other. It is safe
// for concurrent use. Each lock or unlock is one statement in autocommit on the
// *sql.DB, never in a caller's transaction, with the time read from the
// database for that statement alone: pods whose clocks or session time zones
// differ agree on every lock.
//
// The root package imports no driver: import github.com/jackc/pgx/v5/stdlib
// (driver "pgx", in its default mode or with default_query_exec_mode=
// simple_protocol, as behind a pooler in transaction mode) or github.com/lib/pq
// (driver "postgres"). With lib/pq the provider prepares its statements on each
// connection; with pgx it leaves that to the driver, so that under the simple
// protocol no statement is ever prepared.
//
// On first use it checks the session and the table, and refuses, with an error
// wrapping ErrUnsafeStore that says what to change, what would not keep locks:
// a read-only session (a hot standby, or default_transaction_read_only), lock
// times with fewer than 3 fractional digits, columns of other kinds. It takes
// the table's time columns as timestamp (UTC) or timestamptz, as they are. On
// the first use of each name it checks that the name column stores the name
// exactly, so that no two names share a row unnoticed.
//
// Under default_transaction_isolation serializable (or repeatable read), an
// acquisition that meets another pod's concurrent change fails to serialize:
// TryLock reports that as ErrNotAcquired, as it is, and nothing was written.
type PostgresProvider struct{ sqlProvider }

var (
	_ Admin        = (*PostgresProvider)(nil)
	_ Controller   = (*PostgresProvider)(nil)
	_ RunRequester = (*PostgresProvider)(nil)
)

// NewPostgresProvider returns a provider on db. It does not touch the
// database: the session and table are checked on the first lock attempt, so a
// service can start while its database is down. WithTableName takes "table"
// (found on the search_path) or "schema.table", folded to lower case as
// PostgreSQL folds unquoted names: WithTableName("ShedLock") is the table
// shedlock, the one Java ShedLock's unquoted statements use. A table whose name
// was created quoted with capitals cannot be used.
func NewPostgresProvider(db *sql.DB, opts ...ProviderOption) (*PostgresProvider, error) {
	p, err := newSQLProvider("NewPostgresProvider", db, opts, func(o providerOptions) (sqlstore.Store, error) {
		return postgres.New(db, o.table, o.lockedBy)
	})
	if err != nil {
		return nil, err
	}
	return closeWhenGone(&PostgresProvider{p}, p), nil
}
