package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shedlock-go/shedlock/internal/sqlcore"
)

// mysqlTimestampEnd is the last instant a TIMESTAMP column holds. A lock_until past
// it is stored as zero by INSERT IGNORE, which frees the lock at once.
var mysqlTimestampEnd = time.Date(2038, 1, 19, 3, 14, 7, 0, time.UTC)

// mysqlClockMargin covers the gap between this process's clock, used to check a
// LockAtMostFor against mysqlTimestampEnd, and the database's.
const mysqlClockMargin = 24 * time.Hour

// MySQLProvider takes locks in a MySQL or MariaDB table (see migrations/mysql).
// It is safe for concurrent use. Its statements are prepared on first use and run
// in autocommit on the *sql.DB, never in a caller's transaction.
type MySQLProvider struct {
	db     *sql.DB
	opts   providerOptions
	table  string // quoted
	engine sqlcore.Engine

	initMu sync.Mutex
	stmts  *mysqlStatements // nil until the first successful init
}

// mysqlStatements are the four prepared statements, indexed by stmtInsert,
// stmtUpdate, stmtRelease and stmtExtend, and the rare confirming SELECTs.
type mysqlStatements struct {
	dialect               mysqlUTCDialect
	prepared              [4]*sql.Stmt
	owned, ownedUnexpired string
}

// NewMySQLProvider returns a provider on db. It does not touch the database: the
// server is probed and statements prepared on the first lock attempt, so a
// service can start while its database is down.
func NewMySQLProvider(db *sql.DB, opts ...ProviderOption) (*MySQLProvider, error) {
	o, table, err := sqlProviderSetup("NewMySQLProvider", db, '`', opts)
	if err != nil {
		return nil, err
	}
	p := &MySQLProvider{db: db, opts: o, table: table}
	p.engine = newEngine(o, (*mysqlStore)(p))
	return p, nil
}

// LockedBy returns the owner this provider writes to locked_by.
func (p *MySQLProvider) LockedBy() string { return p.opts.lockedBy }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when another
// instance holds it.
func (p *MySQLProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := p.checkEnd(cfg.Name, cfg.LockAtMostFor); err != nil {
		return nil, err
	}
	h, err := p.engine.TryLock(ctx, cfg.Name, cfg.LockAtMostFor, cfg.LockAtLeastFor)
	if err != nil {
		return nil, err
	}
	return &sqlLock{h: h, name: cfg.Name, limit: p}, nil
}

// EnsureTable creates the lock table if it does not exist, with the DDL of
// migrations/mysql.
func (p *MySQLProvider) EnsureTable(ctx context.Context) error {
	return ensureTable(ctx, p.db, "mysql/0001_create_shedlock.up.sql", p.table)
}

// Close releases the prepared statements. Locks still held stay until their
// lock_until.
func (p *MySQLProvider) Close() error {
	p.initMu.Lock()
	defer p.initMu.Unlock()
	if p.stmts == nil {
		return nil
	}
	s := p.stmts
	p.stmts = nil
	return closeAll(s.prepared)
}

func (p *MySQLProvider) now() time.Time {
	if p.opts.now != nil {
		return p.opts.now()
	}
	return time.Now()
}

func (p *MySQLProvider) checkEnd(name string, mostFor time.Duration) error {
	if end := p.now().Add(mostFor); end.After(mysqlTimestampEnd.Add(-mysqlClockMargin)) {
		return fmt.Errorf("%w: lock %q: LockAtMostFor %v puts lock_until past %s, "+
			"the end of what a TIMESTAMP column holds (less a day for clock skew)",
			ErrInvalidConfig, name, mostFor, mysqlTimestampEnd.Format(time.DateTime+" MST"))
	}
	return nil
}

// statements probes the server and prepares the statements once; a failure is
// returned and tried again on the next call.
func (p *MySQLProvider) statements(ctx context.Context) (*mysqlStatements, error) {
	p.initMu.Lock()
	defer p.initMu.Unlock()
	if p.stmts != nil {
		return p.stmts, nil
	}
	dialect, err := detectUTCDialect(ctx, p.db)
	if err != nil {
		return nil, err
	}
	sqlOf := func(stmt string) string { return dialect(strings.ReplaceAll(stmt, "{t}", p.table)) }
	texts := [4]string{mysqlInsert, mysqlUpdate, mysqlRelease, mysqlExtend}
	owned := mysqlOwnedUnexpired
	if p.opts.now != nil {
		texts = [4]string{mysqlClientInsert, mysqlClientUpdate, mysqlClientRelease, mysqlClientExtend}
		owned = mysqlClientOwnedUnexpired
	}
	for i, text := range texts {
		texts[i] = sqlOf(text)
	}
	prepared, err := prepareAll(ctx, p.db, p.table, texts)
	if err != nil {
		return nil, err
	}
	p.stmts = &mysqlStatements{dialect: dialect, prepared: prepared, owned: sqlOf(mysqlOwned), ownedUnexpired: sqlOf(owned)}
	return p.stmts, nil
}

// CheckConfig reports whether cfg is valid and its lock_until fits a TIMESTAMP
// column. It touches no database.
func (p *MySQLProvider) CheckConfig(cfg LockConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return p.checkEnd(cfg.Name, cfg.LockAtMostFor)
}
