package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// postgresMaxIdentifier is the longest name PostgreSQL keeps: it cuts longer
// ones to this many bytes.
const postgresMaxIdentifier = 63

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
type PostgresProvider struct {
	store  *postgresStore
	engine *sqlEngine
}

// NewPostgresProvider returns a provider on db. It does not touch the
// database: the session and table are checked on the first lock attempt, so a
// service can start while its database is down. WithTableName takes "table"
// (found on the search_path) or "schema.table"; each part is quoted, so it is
// matched with its case as given.
func NewPostgresProvider(db *sql.DB, opts ...ProviderOption) (*PostgresProvider, error) {
	o, table, err := sqlProviderSetup("NewPostgresProvider", db, '"', opts)
	if err != nil {
		return nil, err
	}
	for _, part := range strings.Split(o.table, ".") {
		if len(part) > postgresMaxIdentifier {
			return nil, fmt.Errorf("%w: WithTableName(%q): %q is longer than the %d bytes PostgreSQL keeps of a name",
				ErrInvalidOption, o.table, part, postgresMaxIdentifier)
		}
	}
	s := &postgresStore{db: db, table: table, lockedBy: o.lockedBy, prepare: driverNeedsPrepare(db),
		setup: newSetupGate[postgresPrepared]()}
	return &PostgresProvider{store: s, engine: newSQLEngine(o, s)}, nil
}

// LockedBy returns the owner this provider writes to locked_by, before the
// number each acquisition adds.
func (p *PostgresProvider) LockedBy() string { return p.engine.lockedBy }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when it is held.
func (p *PostgresProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := p.CheckConfig(cfg); err != nil {
		return nil, err
	}
	return p.engine.tryLock(ctx, cfg)
}

// CheckConfig reports whether cfg is valid. It touches no database. PostgreSQL
// needs no limit beyond Validate: a timestamp holds dates to the year 294276,
// and the longest time.Duration ends a lock about 292 years from now.
func (p *PostgresProvider) CheckConfig(cfg LockConfig) error { return cfg.Validate() }

// EnsureTable creates the lock table, under the name WithTableName gave, if it
// does not exist, with the DDL of migrations/postgres. Pods that start together
// may all call it: PostgreSQL's CREATE TABLE IF NOT EXISTS can fail for all but
// one of them at once (a duplicate key in pg_type), and a table that exists when
// the error comes back is success.
func (p *PostgresProvider) EnsureTable(ctx context.Context) error {
	err := ensureTable(ctx, p.store.db, "postgres/0001_create_shedlock.up.sql", p.store.table)
	if err == nil {
		return nil
	}
	var exists bool
	if qerr := p.store.db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", p.store.table).Scan(&exists); qerr == nil && exists {
		return nil
	}
	return err
}

// Close releases the statements prepared for lib/pq. Locks still held stay
// until their lock_until; a later lock attempt checks the table again. The
// *sql.DB is the caller's to close.
func (p *PostgresProvider) Close() error {
	return p.store.setup.reset((*postgresPrepared).close)
}
