package shedlock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/shedlock-go/shedlock/migrations"
)

// sqlProviderSetup checks what every SQL provider's constructor takes, and returns
// the options and the table name quoted with q.
func sqlProviderSetup(ctor string, db *sql.DB, q byte, opts []ProviderOption) (providerOptions, string, error) {
	if db == nil {
		return providerOptions{}, "", fmt.Errorf("%w: %s: nil *sql.DB", ErrInvalidOption, ctor)
	}
	o := defaultProviderOptions()
	for i, opt := range opts {
		if opt == nil {
			return providerOptions{}, "", fmt.Errorf("%w: %s: option %d is nil", ErrInvalidOption, ctor, i)
		}
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return providerOptions{}, "", err
	}
	table, err := quoteTable(o.table, q)
	return o, table, err
}

// setupGate runs a provider's first-use setup once it succeeds, one caller at a
// time; a caller waiting for another's setup stops waiting when its ctx ends.
type setupGate[T any] struct {
	turn chan struct{}
	done atomic.Pointer[T]
}

func newSetupGate[T any]() *setupGate[T] {
	return &setupGate[T]{turn: make(chan struct{}, 1)}
}

// get returns what setup made, running it first if no call has succeeded yet.
func (g *setupGate[T]) get(ctx context.Context, setup func(context.Context) (*T, error)) (*T, error) {
	if v := g.done.Load(); v != nil {
		return v, nil
	}
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("shedlock: wait for the provider's first-use setup: %w", context.Cause(ctx))
	}
	defer func() { <-g.turn }()
	if v := g.done.Load(); v != nil {
		return v, nil
	}
	v, err := setup(ctx)
	if err != nil {
		return nil, err
	}
	g.done.Store(v)
	return v, nil
}

// reset forgets what setup made, after closing it; the next get sets up again.
func (g *setupGate[T]) reset(closeFn func(*T) error) error {
	g.turn <- struct{}{}
	defer func() { <-g.turn }()
	if v := g.done.Swap(nil); v != nil {
		return closeFn(v)
	}
	return nil
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
