package integration_test

// Issue 16, item 4: PostgreSQL folds an unquoted name to lower case, so Java
// ShedLock's `CREATE TABLE ShedLock` and its statements on ShedLock name the
// table shedlock. WithTableName("ShedLock") is quoted, a different table:
// EnsureTable creates it next to Java's, and Java and Go pods both hold the
// lock. Required: follow PostgreSQL's folding of unquoted names, or refuse
// mixed case with the reason.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

func TestPostgresMixedCaseTableNameIsJavasTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.OpenPostgres(t, testdb.PGX, nil)
	var b [4]byte
	_, _ = rand.Read(b[:])
	mixed := "ShedLock_" + hex.EncodeToString(b[:]) // as Java's documentation spells it
	// Java's DDL, unquoted: the table is named in lower case.
	_, err := admin.ExecContext(ctx, "CREATE TABLE "+mixed+"(name VARCHAR(64) NOT NULL, lock_until TIMESTAMP NOT NULL, "+
		"locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL, PRIMARY KEY (name))")
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+mixed)
		_, _ = admin.ExecContext(ctx, `DROP TABLE IF EXISTS "`+mixed+`"`)
	})

	p, err := shedlock.NewPostgresProvider(testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(mixed))
	if err != nil {
		requireMixedCaseRefused(t, err, mixed)
		return
	}
	t.Cleanup(func() { _ = p.Close() })
	err = p.EnsureTable(ctx)
	var tables []string
	rows, qerr := admin.QueryContext(ctx, "SELECT relname FROM pg_class WHERE lower(relname) = lower($1) AND relkind = 'r' "+
		"AND relnamespace = current_schema()::regnamespace ORDER BY relname", mixed)
	require.NoError(t, qerr)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	assert.Len(t, tables, 1, "EnsureTable must not create a second table next to Java's: found %q", tables)
	if err != nil {
		requireMixedCaseRefused(t, err, mixed)
		return
	}

	java := &javaPod{db: admin, table: mixed, host: "java-pod"}
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	jl, err := java.TryLock(ctx, cfg)
	require.NoError(t, err, "the Java pod takes the free lock")
	l, err := p.TryLock(ctx, cfg)
	if err != nil && !errors.Is(err, shedlock.ErrNotAcquired) {
		requireMixedCaseRefused(t, err, mixed)
		return
	}
	assert.ErrorIs(t, err, shedlock.ErrNotAcquired, "the Go pod must not take the lock the Java pod holds")
	if err == nil {
		require.NoError(t, l.Unlock(ctx))
	}
	require.NoError(t, jl.Unlock(ctx))

	gl, err := p.TryLock(ctx, cfg)
	require.NoError(t, err, "the Go pod takes the lock the Java pod released")
	_, err = java.TryLock(ctx, cfg)
	assert.ErrorIs(t, err, shedlock.ErrNotAcquired, "the Java pod must not take the lock the Go pod holds")
	require.NoError(t, gl.Unlock(ctx))
}

// requireMixedCaseRefused accepts a refusal of the mixed-case name that says
// why: the name the user gave, as an option or store error.
func requireMixedCaseRefused(t *testing.T, err error, mixed string) {
	t.Helper()
	require.True(t, errors.Is(err, shedlock.ErrInvalidOption) || errors.Is(err, shedlock.ErrInvalidConfig) ||
		errors.Is(err, shedlock.ErrUnsafeStore), "a refusal of %q must be ErrInvalidOption, ErrInvalidConfig or ErrUnsafeStore: %v", mixed, err)
	assert.Contains(t, err.Error(), mixed, "the refusal names the table name")
}
