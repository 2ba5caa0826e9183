package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
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
	store  *sqliteStore
	engine *sqlEngine
}

// NewSQLiteProvider returns a provider on db. It does not touch the database; on
// the first lock attempt it checks the table's columns, prepares its statements,
// reads the connection's busy_timeout and journal_mode, and logs a warning (see
// WithLogger) when they are not set for several processes.
func NewSQLiteProvider(db *sql.DB, opts ...ProviderOption) (*SQLiteProvider, error) {
	o, table, err := sqlProviderSetup("NewSQLiteProvider", db, '"', opts)
	if err != nil {
		return nil, err
	}
	s := &sqliteStore{db: db, table: table, tableName: o.table, opts: o, setup: newSetupGate[[4]*sql.Stmt]()}
	return &SQLiteProvider{store: s, engine: newSQLEngine(o, s)}, nil
}

// LockedBy returns the owner this provider writes to locked_by, before the
// number each acquisition adds.
func (p *SQLiteProvider) LockedBy() string { return p.engine.lockedBy }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when it is held.
// A database locked by another process for longer than the busy timeout returns
// that error, not ErrNotAcquired.
func (p *SQLiteProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.engine.tryLock(ctx, cfg)
}

// CheckConfig reports whether cfg is valid. It touches no database.
func (p *SQLiteProvider) CheckConfig(cfg LockConfig) error { return cfg.Validate() }

// EnsureTable creates the lock table, under the name WithTableName gave, if it
// does not exist, with the DDL of migrations/sqlite.
func (p *SQLiteProvider) EnsureTable(ctx context.Context) error {
	return ensureTable(ctx, p.store.db, "sqlite/0001_create_shedlock.up.sql", p.store.table)
}

// Close releases the prepared statements. Locks still held stay until their
// lock_until. The *sql.DB is the caller's to close.
func (p *SQLiteProvider) Close() error {
	return p.store.setup.reset(func(s *[4]*sql.Stmt) error { return closeAll(*s) })
}

// sqliteStore runs the SQLite statements; it is the provider's sqlStore. SQLite
// counts every row an UPDATE's WHERE matched as changed, even when the values
// stay the same, so a 0 from RowsAffected always means "not ours".
type sqliteStore struct {
	db        *sql.DB
	table     string // quoted
	tableName string
	opts      providerOptions
	setup     *setupGate[[4]*sql.Stmt] // by stmtInsert, stmtUpdate, stmtRelease, stmtExtend
}

// prepare checks the table's columns, warns about a pool not set up for several
// processes, and prepares the statements.
func (s *sqliteStore) prepare(ctx context.Context) (*[4]*sql.Stmt, error) {
	table := s.tableName
	if _, t, ok := strings.Cut(table, "."); ok {
		table = t // pragma_table_info takes the schema as a second argument; the main one is usual
	}
	rows, err := s.db.QueryContext(ctx, sqliteColumns, table)
	if err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", s.tableName, err)
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", s.tableName, err)
		}
		have[strings.ToLower(name)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("shedlock: read the columns of table %s: %w", s.tableName, err)
	}
	if len(have) == 0 {
		return nil, fmt.Errorf("%w: table %s does not exist: create it with EnsureTable or the DDL of "+
			"migrations/sqlite", ErrUnsafeStore, s.tableName)
	}
	for _, c := range []string{"name", "lock_until", "locked_at", "locked_by"} {
		if !have[c] {
			return nil, fmt.Errorf("%w: table %s has no column %s: create it with the DDL of migrations/sqlite",
				ErrUnsafeStore, s.tableName, c)
		}
	}
	s.warnUnlessShared(ctx)
	texts := [4]string{sqliteInsert, sqliteUpdate, sqliteRelease, sqliteExtend}
	for i, t := range texts {
		texts[i] = strings.ReplaceAll(t, "{t}", s.table)
	}
	stmts, err := prepareAll(ctx, s.db, s.table, texts)
	if err != nil {
		return nil, err
	}
	return &stmts, nil
}

// warnUnlessShared warns when the pool is not set up for several processes. It
// is advice, not a guard: without a busy timeout a busy file makes lock attempts
// fail, which is safe, only noisy.
func (s *sqliteStore) warnUnlessShared(ctx context.Context) {
	var busy int
	var mode string
	if err := s.db.QueryRowContext(ctx, sqliteSettings).Scan(&busy, &mode); err != nil {
		return
	}
	if busy <= 0 || !strings.EqualFold(mode, "wal") {
		s.opts.logger.WarnContext(ctx, "shedlock: SQLite connection is not set up for several processes; "+
			"open the database with shedlock.SQLiteDSNParams", "busy_timeout_ms", busy, "journal_mode", mode)
	}
}

func (s *sqliteStore) exec(ctx context.Context, which int, args ...any) (bool, error) {
	stmts, err := s.setup.get(ctx, s.prepare)
	if err != nil {
		return false, err
	}
	return execChanged(ctx, stmts[which], args...)
}

func (s *sqliteStore) insert(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtInsert, a.name, mostFor.Milliseconds(), a.token)
}

func (s *sqliteStore) update(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtUpdate, mostFor.Milliseconds(), a.token, a.name)
}

func (s *sqliteStore) release(ctx context.Context, a sqlArgs, leastFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtRelease, leastFor.Milliseconds(), a.name, a.token)
}

func (s *sqliteStore) extend(ctx context.Context, a sqlArgs, mostFor time.Duration) (bool, error) {
	return s.exec(ctx, stmtExtend, mostFor.Milliseconds(), a.name, a.token)
}

// nameKey is the name itself: SQLite stores any text exactly, and the table's
// DDL compares names byte for byte.
func (s *sqliteStore) nameKey(ctx context.Context, name string) (string, error) {
	if _, err := s.setup.get(ctx, s.prepare); err != nil {
		return "", err
	}
	return name, nil
}
