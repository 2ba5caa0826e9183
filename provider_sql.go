package shedlock

import (
	"context"
	"database/sql"
	"fmt"
	"runtime"
	"time"

	"github.com/shedlock-go/shedlock/internal/lockcfg"
	"github.com/shedlock-go/shedlock/internal/sqlstore"
)

// sqlProvider is what every SQL provider is: the shared engine on one dialect's
// store. MySQLProvider, PostgresProvider and SQLiteProvider embed it, so that
// its methods are theirs.
type sqlProvider struct {
	engine *sqlstore.Engine
	db     *sql.DB
}

// newSQLProvider checks what every SQL provider's constructor takes and opens
// the dialect's store with the options.
func newSQLProvider(ctor string, db *sql.DB, opts []ProviderOption,
	open func(providerOptions) (sqlstore.Store, error)) (sqlProvider, error) {
	if db == nil {
		return sqlProvider{}, fmt.Errorf("%w: %s: nil *sql.DB", ErrInvalidOption, ctor)
	}
	o, err := newProviderOptions(ctor, opts)
	if err != nil {
		return sqlProvider{}, err
	}
	store, err := open(o)
	if err != nil {
		return sqlProvider{}, err
	}
	return sqlProvider{db: db, engine: sqlstore.NewEngine(store, sqlstore.Config{
		LockedBy: o.lockedBy, Logger: o.logger, Retries: o.releaseRetries, Backoff: o.releaseBackoff,
		CheckDurations: validateDurations, HonoursContext: sqlstore.HonoursContext(db),
	})}, nil
}

// closeWhenGone makes the store's prepared statements go with the provider: a
// provider that is dropped without Close must not leave them on the server,
// where they count against its limit for every client (max_prepared_stmt_count
// on MySQL).
func closeWhenGone[T any](facade *T, p sqlProvider) *T {
	runtime.AddCleanup(facade, func(e *sqlstore.Engine) { _ = e.Close() }, p.engine)
	return facade
}

// PoolSize reports the *sql.DB's MaxOpenConnections (0: no limit): an
// executor keeps its statements in flight within it (see WithMaxInFlight).
func (p *sqlProvider) PoolSize() int { return p.db.Stats().MaxOpenConnections }

// LockedBy returns the owner this provider writes to locked_by, before the
// number each acquisition adds.
func (p *sqlProvider) LockedBy() string { return p.engine.LockedBy() }

// TryLock makes one attempt to take cfg's lock: ErrNotAcquired when it is held.
func (p *sqlProvider) TryLock(ctx context.Context, cfg LockConfig) (Lock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return p.TryLockChecked(ctx, cfg, lockcfg.Checked{})
}

// TryLockChecked is TryLock on a config the executor has validated
// (lockcfg.Checked, which only this repository's modules can name): only what
// the store adds is checked.
func (p *sqlProvider) TryLockChecked(ctx context.Context, cfg LockConfig, _ lockcfg.Checked) (Lock, error) {
	if err := p.engine.CheckEnd(cfg.Name, cfg.LockAtMostFor); err != nil {
		return nil, err
	}
	l, err := p.engine.TryLock(ctx, cfg.Name, cfg.LockAtMostFor, cfg.LockAtLeastFor)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// CheckConfig reports whether cfg is valid and its lock_until fits the
// table's column (a MySQL TIMESTAMP ends in January 2038). It touches no
// database.
func (p *sqlProvider) CheckConfig(cfg LockConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	return p.engine.CheckEnd(cfg.Name, cfg.LockAtMostFor)
}

// NameKey returns the name column's form of name (see NameKeyer): on MySQL
// and MariaDB its weight under the column's collation, read with one
// statement the first time the provider sees the name; elsewhere the name
// itself, unless a PostgreSQL column's collation is nondeterministic and the
// table has a row of another spelling of it.
func (p *sqlProvider) NameKey(ctx context.Context, name string) (string, error) {
	return p.engine.NameKey(ctx, name)
}

// EnsureTable creates the lock table, under the name WithTableName gave, if it
// does not exist, with the DDL of the store's folder in migrations.
func (p *sqlProvider) EnsureTable(ctx context.Context) error { return p.engine.EnsureTable(ctx) }

// Close releases the prepared statements. Locks still held stay until their
// lock_until; a later lock attempt checks the table and prepares again. The
// *sql.DB is the caller's to close. It returns within 5 seconds: a statement
// still running on a connection that hangs is closed when that connection
// ends.
func (p *sqlProvider) Close() error { return p.engine.Close() }

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

var _ FireLocker = (*sqlProvider)(nil)

// TryLockFire takes cfg's lock for the run of fire time fire, only if the
// table's last_success records an older fire time, or none: the condition is
// in the acquiring statement itself. See [FireLocker] and [CatchUp]. A table
// without the column (migration 0003) is ErrUnsafeStore, naming the migration.
func (p *sqlProvider) TryLockFire(ctx context.Context, cfg LockConfig, fire time.Time) (FireLock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := p.engine.CheckEnd(cfg.Name, cfg.LockAtMostFor); err != nil {
		return nil, err
	}
	l, err := p.engine.TryLockFire(ctx, cfg.Name, cfg.LockAtMostFor, fire)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// LastFire returns the fire time the table's last_success records for name.
func (p *sqlProvider) LastFire(ctx context.Context, name string) (time.Time, bool, error) {
	return p.engine.LastFire(ctx, name)
}
