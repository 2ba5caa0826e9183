package shedlock

import (
	"database/sql"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
	"github.com/shedlock-go/shedlock/internal/sqlstore/sqlite"
)

// SQLiteDSNParams are the DSN parameters of modernc.org/sqlite that a lock file
// shared by several processes needs: WAL, so that readers do not block the writer;
// a busy timeout, so that a statement waits for another process's write instead of
// failing at once; and BEGIN IMMEDIATE for the application's own transactions, so
// that a transaction that reads and then writes waits for the write lock up front
// rather than failing with SQLITE_BUSY half-way. Append them to the file name:
//
//	sql.Open("sqlite", "file:/var/lib/app/app.db?"+shedlock.SQLiteDSNParams)
//
// The driver runs the pragmas on every connection it opens; busy_timeout is a
// setting of each connection, which is why it belongs in the DSN.
const SQLiteDSNParams = "_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"

// SQLiteProvider takes locks in a SQLite table (see migrations/sqlite), with
// SQLite's own clock: every process on the host reads the same one. It is safe for
// concurrent use, and several processes may share one database file (open it with
// [SQLiteDSNParams]). Each statement runs in autocommit on the *sql.DB, never in a
// caller's transaction; a database busy beyond the busy timeout is an error, never
// a lock granted: TryLock then returns that error, not ErrNotAcquired.
//
// The root package does not import a driver: import modernc.org/sqlite (driver
// name "sqlite") or another database/sql SQLite driver yourself.
type SQLiteProvider struct{ sqlProvider }

var (
	_ Admin        = (*SQLiteProvider)(nil)
	_ Controller   = (*SQLiteProvider)(nil)
	_ RunRequester = (*SQLiteProvider)(nil)
)

// NewSQLiteProvider returns a provider on db. It does not touch the database; on
// the first lock attempt it checks the table's columns, prepares its statements,
// reads the connection's busy_timeout and journal_mode, and logs a warning (see
// WithLogger) when they are not set for several processes.
func NewSQLiteProvider(db *sql.DB, opts ...ProviderOption) (*SQLiteProvider, error) {
	p, err := newSQLProvider("NewSQLiteProvider", db, opts, func(o providerOptions) (sqlstore.Store, error) {
		return sqlite.New(db, o.table, o.logger)
	})
	if err != nil {
		return nil, err
	}
	return closeWhenGone(&SQLiteProvider{p}, p), nil
}
