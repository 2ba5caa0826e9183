package integration_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// A row written by hand with NULL columns (a table whose columns allow NULL,
// as hand-made tables sometimes do) is its member's problem alone, as TryLock
// finds it: not acquired. The batch's other members are taken.
func TestBatchNullRowFailsItsMemberAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	table := customTable(t, admin, "CREATE TABLE {t} (name VARCHAR(64) NOT NULL, lock_until TIMESTAMP(3) NULL, "+
		"locked_at TIMESTAMP(3) NULL, locked_by VARCHAR(255) NULL, PRIMARY KEY (name)) ENGINE=InnoDB")
	_, err := admin.ExecContext(ctx, "INSERT INTO "+table+" (name, lock_until, locked_at, locked_by) VALUES ('m-null', NULL, NULL, NULL)")
	require.NoError(t, err)
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	res, err := p.TryLockBatch(ctx, batchOf("a", "m-null", "z"))
	if err != nil {
		var held int
		require.NoError(t, admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+
			" WHERE lock_until > UTC_TIMESTAMP(3)").Scan(&held))
		t.Errorf("a row of NULLs failed the whole batch (%v); rows it left held, with nobody told: %d", err, held)
		return
	}
	require.NoError(t, res[0].Err, "a")
	assert.ErrorIs(t, res[1].Err, shedlock.ErrNotAcquired, "m-null")
	require.NoError(t, res[2].Err, "z")
	_, err = p.TryLock(ctx, shedlock.LockConfig{Name: "m-null", LockAtMostFor: time.Minute})
	assert.ErrorIs(t, err, shedlock.ErrNotAcquired, "TryLock on m-null")
}
