package shedlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/shedlock-go/shedlock/internal/sqlcore"
	"github.com/shedlock-go/shedlock/migrations"
)

// sqlProviderSetup checks what every SQL provider's constructor takes, and returns
// the options and the table name quoted with q.
func sqlProviderSetup(ctor string, db *sql.DB, q byte, opts []ProviderOption) (providerOptions, string, error) {
	if db == nil {
		return providerOptions{}, "", fmt.Errorf("%w: %s: nil *sql.DB", ErrInvalidOption, ctor)
	}
	o := defaultProviderOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return providerOptions{}, "", err
	}
	table, err := quoteTable(o.table, q)
	return o, table, err
}

func newEngine(o providerOptions, store sqlcore.Store) sqlcore.Engine {
	return sqlcore.Engine{
		Store: store,
		Owner: o.lockedBy,
		Errs:  sqlcore.Errors{NotAcquired: ErrNotAcquired, LockLost: ErrLockLost, ReleaseFailed: ErrReleaseFailed},
		Log:   o.logger, Retries: o.releaseRetries, Backoff: o.releaseBackoff,
	}
}

// ensureTable runs a store's first migration with the table name replaced.
func ensureTable(ctx context.Context, db *sql.DB, migration, table string) error {
	ddl, err := migrations.FS.ReadFile(migration)
	if err != nil {
		return fmt.Errorf("shedlock: read migration: %w", err)
	}
	const head = "CREATE TABLE IF NOT EXISTS shedlock ("
	rest, ok := strings.CutPrefix(string(ddl), head)
	if !ok {
		return errors.New("shedlock: migration " + migration + " does not start with " + head)
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+table+" ("+rest); err != nil {
		return fmt.Errorf("shedlock: create table %s: %w", table, err)
	}
	return nil
}

// The four statements every SQL provider prepares, by index.
const (
	stmtInsert = iota
	stmtUpdate
	stmtRelease
	stmtExtend
)

// prepareAll prepares a provider's four statements, closing those it prepared
// when one fails so that a retry on the next call leaks nothing.
func prepareAll(ctx context.Context, db *sql.DB, table string, texts [4]string) ([4]*sql.Stmt, error) {
	var prepared [4]*sql.Stmt
	for i, text := range texts {
		st, err := db.PrepareContext(ctx, text)
		if err != nil {
			_ = closeAll(prepared)
			return [4]*sql.Stmt{}, fmt.Errorf("shedlock: prepare statements on %s: %w", table, err)
		}
		prepared[i] = st
	}
	return prepared, nil
}

// closeAll closes what prepareAll returned; nil entries are skipped.
func closeAll(stmts [4]*sql.Stmt) error {
	var errs []error
	for _, st := range stmts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// execChanged runs st and reports whether it changed a row.
func execChanged(ctx context.Context, st *sql.Stmt, args ...any) (bool, error) {
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}
