package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// mysqlTimestampEnd is the last instant a TIMESTAMP column holds. A lock_until past
// it is stored as zero by INSERT IGNORE, which frees the lock at once.
var mysqlTimestampEnd = time.Date(2038, 1, 19, 3, 14, 7, 0, time.UTC)

// mysqlClockMargin covers the gap between this process's clock, used to check a
// LockAtMostFor against mysqlTimestampEnd, and the database's.
const mysqlClockMargin = 24 * time.Hour

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
// a row unnoticed.
type MySQLProvider struct {
	store  *mysqlStore
	engine *sqlEngine
}

// NewMySQLProvider returns a provider on db. It does not touch the database: the
// server is probed and statements prepared on the first lock attempt, so a
// service can start while its database is down.
func NewMySQLProvider(db *sql.DB, opts ...ProviderOption) (*MySQLProvider, error) {
	o, table, err := sqlProviderSetup("NewMySQLProvider", db, '`', opts)
	if err != nil {
		return nil, err
	}
	s := &mysqlStore{db: db, table: table, tableName: o.table, lockedBy: o.lockedBy, setup: newSetupGate[mysqlPrepared]()}
	return &MySQLProvider{store: s, engine: newSQLEngine(o, s)}, nil
}

// LockedBy returns the owner this provider writes to locked_by, before the
// number each acquisition adds.
func (p *MySQLProvider) LockedBy() string { return p.engine.lockedBy }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when it is held.
func (p *MySQLProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := p.CheckConfig(cfg); err != nil {
		return nil, err
	}
	return p.engine.tryLock(ctx, cfg)
}

// CheckConfig reports whether cfg is valid and its lock_until fits a TIMESTAMP
// column. It touches no database.
func (p *MySQLProvider) CheckConfig(cfg LockConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return p.store.checkEnd(cfg.Name, cfg.LockAtMostFor)
}

// EnsureTable creates the lock table, under the name WithTableName gave, if it
// does not exist, with the DDL of migrations/mysql.
func (p *MySQLProvider) EnsureTable(ctx context.Context) error {
	return ensureTable(ctx, p.store.db, "mysql/0001_create_shedlock.up.sql", p.store.table)
}

// Close releases the prepared statements. Locks still held stay until their
// lock_until; a later lock attempt prepares the statements again.
func (p *MySQLProvider) Close() error {
	return p.store.setup.reset(func(s *mysqlPrepared) error { return closeAll(s.stmts) })
}

// checkEnd refuses a LockAtMostFor whose lock_until a TIMESTAMP cannot hold.
func (s *mysqlStore) checkEnd(name string, mostFor time.Duration) error {
	if end := time.Now().Add(mostFor); end.After(mysqlTimestampEnd.Add(-mysqlClockMargin)) {
		return fmt.Errorf("%w: lock %q: LockAtMostFor %v puts lock_until past %s, "+
			"the end of what a TIMESTAMP column holds (less a day for clock skew)",
			ErrInvalidConfig, name, mostFor, mysqlTimestampEnd.Format(time.DateTime+" MST"))
	}
	return nil
}
