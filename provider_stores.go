package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlstore"
	"github.com/shedlock-go/shedlock/internal/sqlstore/mysql"
	"github.com/shedlock-go/shedlock/internal/sqlstore/postgres"
	"github.com/shedlock-go/shedlock/internal/sqlstore/sqlite"
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

// Locks returns every lock in the table, by name, with the database's view of
// whether each is held now. See [Admin].
func (p *sqlProvider) Locks(ctx context.Context) ([]LockInfo, error) {
	rows, err := p.engine.Locks(ctx)
	if err != nil {
		return nil, err
	}
	locks := make([]LockInfo, len(rows))
	for i, r := range rows {
		locks[i] = LockInfo(r)
	}
	return locks, nil
}

// Inspect returns the lock of exactly this name (byte for byte, not another
// that the name column's collation makes equal); ErrLockNotFound if there is
// none.
func (p *sqlProvider) Inspect(ctx context.Context, name string) (LockInfo, error) {
	info, err := p.engine.Inspect(ctx, name)
	return LockInfo(info), err
}

// ForceUnlock frees the lock of exactly this name whoever holds it, and returns
// it as it was just before. Read [Admin] for when that is safe.
func (p *sqlProvider) ForceUnlock(ctx context.Context, name string) (LockInfo, error) {
	info, err := p.engine.ForceUnlock(ctx, name)
	return LockInfo(info), err
}

// ForceUnlockSeen frees the acquisition seen shows, never one taken since;
// ErrLockChanged when another holds the lock now. See [Admin].
func (p *sqlProvider) ForceUnlockSeen(ctx context.Context, seen LockInfo) (LockInfo, error) {
	info, err := p.engine.ForceUnlockSeen(ctx, sqlstore.Info(seen))
	return LockInfo(info), err
}

// HealthCheck reports whether the server is reachable, the session can write
// and the table is usable for locks. See [Admin].
func (p *sqlProvider) HealthCheck(ctx context.Context) error { return p.engine.HealthCheck(ctx) }

// Pause stops the job of this name on every instance until until, or until
// Resume when until is zero: each acquisition by a provider of this package,
// TryLock, TryLockBatch and CatchUp's, is refused with ErrPaused, decided by
// the acquiring statement itself by the database's clock, with no statement
// more. A run under way goes on, and its lock is extended and released as
// usual. A name without a row gets one, free. An until that has passed is
// ErrInvalidConfig. Java ShedLock pods on the table do not honour a pause.
// A table without the columns of migration 0004 is ErrUnsafeStore, naming
// it. See [Controller].
func (p *sqlProvider) Pause(ctx context.Context, name string, until time.Time) error {
	if err := validName(name); err != nil {
		return err
	}
	return p.engine.Pause(ctx, name, until)
}

// Resume ends a pause; a name that is not paused is no error. See
// [Controller].
func (p *sqlProvider) Resume(ctx context.Context, name string) error {
	if err := validName(name); err != nil {
		return err
	}
	return p.engine.Resume(ctx, name)
}

// RunNow asks for one more run of the job and returns how many are asked for
// and not yet run (see [Controller] and [RunRequester]). A name without a row
// gets one, free.
func (p *sqlProvider) RunNow(ctx context.Context, name string) (int64, error) {
	if err := validName(name); err != nil {
		return 0, err
	}
	return p.engine.RunNow(ctx, name)
}

// RunRequests returns, for those of names with run requests not yet run, how
// many there are, with one statement. A table without the columns of
// migration 0004 has none. See [RunRequester].
func (p *sqlProvider) RunRequests(ctx context.Context, names []string) (map[string]int64, error) {
	return p.engine.RunRequests(ctx, names)
}

// RunDone marks one run request of name run, if one is left, in one
// statement that counts it only while held, a lock a SQL provider of this
// package returned for name (or one that stands for it, see storeLocker),
// still holds it unexpired, and only once per acquisition (a RunDone sent
// again marks nothing more); ErrLockLost when held no longer holds it. See
// [RunRequester].
func (p *sqlProvider) RunDone(ctx context.Context, name string, held Lock) error {
	if s, ok := held.(storeLocker); ok {
		held = s.storeLock()
	}
	l, ok := held.(*sqlstore.Lock)
	if !ok {
		return fmt.Errorf("%w: run done for %q: the lock (%T) was not taken by a SQL provider", ErrInvalidConfig, name, held)
	}
	return p.engine.RunDone(ctx, name, l)
}

// storeLocker is implemented by a lock that stands for a provider's own, as
// the one a task sees through LockFromContext does: RunDone checks the
// acquisition of the provider's lock. The method is unexported: no caller
// outside this package reaches the lock it stands for.
type storeLocker interface{ storeLock() Lock }

// validName checks a name an operator gives as a lock's name is checked.
func validName(name string) error {
	return LockConfig{Name: name, LockAtMostFor: MinLockAtMostFor}.Validate()
}

var (
	_ BatchLocker = (*MySQLProvider)(nil)
	_ BatchLocker = (*PostgresProvider)(nil)
	_ BatchLocker = (*SQLiteProvider)(nil)
)
