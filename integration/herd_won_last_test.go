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

// A row another transaction holds (an operator's SELECT ... FOR UPDATE left
// open) is that job's problem alone. When this pod won that job's last
// attempt, its next attempt hangs on the row; the pod's other jobs, with
// slots free (8 by default), must still be tried at once, not wait behind it
// for the acquire timeout.
func TestHerdHungWonLastAttemptStallsNoOtherJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	table := testdb.NewFencedTable(t, admin)
	p := newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
	ex := shedlock.NewExecutor(p, shedlock.WithAcquireTimeout(5*time.Second))
	defer ex.Stop(ctx)
	noop := func(context.Context) error { return nil }
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	ran, err := ex.Run(ctx, cfg("won"), noop)
	require.NoError(t, err)
	require.True(t, ran)

	tx, err := admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	var got string
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT name FROM "+table+" WHERE name = ? FOR UPDATE", "won").Scan(&got))

	hung := make(chan struct{})
	go func() { defer close(hung); _, _ = ex.Run(ctx, cfg("won"), noop) }()
	time.Sleep(200 * time.Millisecond) // let the won-last attempt reach the row and hang on it
	start := time.Now()
	ran, err = ex.Run(ctx, cfg("fresh"), noop) // a job this pod has not won before
	took := time.Since(start)
	require.NoError(t, err)
	assert.True(t, ran)
	assert.Less(t, took, 2*time.Second, "another job's attempt waited %v behind the hung one, with 7 attempt slots free",
		took.Round(time.Millisecond))
	require.NoError(t, tx.Rollback())
	<-hung
}
