package shedlock

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/shedlock-go/shedlock/internal/sqlcore"
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
// a lock granted.
//
// The root package does not import a driver: import modernc.org/sqlite (driver
// name "sqlite") or another database/sql SQLite driver yourself.
type SQLiteProvider struct {
	db     *sql.DB
	opts   providerOptions
	table  string // quoted
	engine sqlcore.Engine

	probeMu sync.Mutex
	probed  bool

	initMu sync.Mutex
	stmts  *sqliteStatements // nil until the first successful prepare
}

// NewSQLiteProvider returns a provider on db. It does not touch the database; on
// the first lock attempt it prepares its statements, reads the connection's
// busy_timeout and journal_mode once, and logs a warning (see WithLogger) when
// they are not set for several processes.
func NewSQLiteProvider(db *sql.DB, opts ...ProviderOption) (*SQLiteProvider, error) {
	o, table, err := sqlProviderSetup("NewSQLiteProvider", db, '"', opts)
	if err != nil {
		return nil, err
	}
	p := &SQLiteProvider{db: db, opts: o, table: table}
	p.engine = newEngine(o, (*sqliteStore)(p))
	return p, nil
}

// LockedBy returns the owner this provider writes to locked_by.
func (p *SQLiteProvider) LockedBy() string { return p.opts.lockedBy }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when another
// instance holds it. A database locked by another process for longer than the
// busy timeout returns that error, not ErrNotAcquired.
func (p *SQLiteProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p.probe(ctx)
	h, err := p.engine.TryLock(ctx, cfg.Name, cfg.LockAtMostFor, cfg.LockAtLeastFor)
	if err != nil {
		return nil, err
	}
	return &sqlLock{h: h, name: cfg.Name}, nil
}

// EnsureTable creates the lock table if it does not exist, with the DDL of
// migrations/sqlite.
func (p *SQLiteProvider) EnsureTable(ctx context.Context) error {
	return ensureTable(ctx, p.db, "sqlite/0001_create_shedlock.up.sql", p.table)
}

// Close releases the prepared statements. Locks still held stay until their
// lock_until. The *sql.DB is the caller's to close.
func (p *SQLiteProvider) Close() error {
	p.initMu.Lock()
	defer p.initMu.Unlock()
	if p.stmts == nil {
		return nil
	}
	s := p.stmts
	p.stmts = nil
	return closeAll(*s)
}

// statements prepares the statements once; a failure is returned and tried
// again on the next call. Prepared, the driver compiles each statement once per
// connection instead of on every call.
func (p *SQLiteProvider) statements(ctx context.Context) (*sqliteStatements, error) {
	p.initMu.Lock()
	defer p.initMu.Unlock()
	if p.stmts != nil {
		return p.stmts, nil
	}
	prepared, err := prepareAll(ctx, p.db, p.table, sqliteTexts(p.table, p.opts.now != nil))
	if err != nil {
		return nil, err
	}
	p.stmts = (*sqliteStatements)(&prepared)
	return p.stmts, nil
}

// probe warns once when the pool is not set up for several processes. It is
// advice, not a guard: without a busy timeout a busy file makes lock attempts
// fail, which is safe, only noisy.
func (p *SQLiteProvider) probe(ctx context.Context) {
	p.probeMu.Lock()
	defer p.probeMu.Unlock()
	if p.probed {
		return
	}
	var busy int
	var mode string
	if err := p.db.QueryRowContext(ctx, "SELECT b.timeout, j.journal_mode FROM pragma_busy_timeout AS b, pragma_journal_mode AS j").
		Scan(&busy, &mode); err != nil {
		return // the lock statement will report what is wrong; probe again next time
	}
	p.probed = true
	if busy <= 0 || !strings.EqualFold(mode, "wal") {
		p.opts.logger.WarnContext(ctx, "shedlock: SQLite connection is not set up for several processes; "+
			"open the database with shedlock.SQLiteDSNParams", "busy_timeout_ms", busy, "journal_mode", mode)
	}
}

// CheckConfig reports whether cfg is valid. It touches no database.
func (p *SQLiteProvider) CheckConfig(cfg LockConfig) error { return cfg.Validate() }
