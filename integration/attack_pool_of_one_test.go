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

// WithMaxInFlight defaults to the pool's size, and promises that "a lock this
// instance holds is kept and freed in one statement's time, even while every
// attempt hangs on rows another transaction holds". With a pool of one
// connection (the default bound is then 1), an attempt hung on a row another
// transaction holds keeps that connection, and a running job's release waits
// for it.
func TestAttackPoolOfOneReleaseWaitsForHungAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	table := testdb.NewFencedTable(t, admin)
	db := testdb.Open(t, nil)
	db.SetMaxOpenConns(1)
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	ex := shedlock.NewExecutor(p, shedlock.WithAcquireTimeout(6*time.Second))
	defer ex.Stop(ctx)
	cfg := func(name string) shedlock.LockConfig {
		return shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute}
	}
	// The row exists, free, so that the operator can hold it.
	ran, err := ex.Run(ctx, cfg("held"), func(context.Context) error { return nil })
	require.NoError(t, err)
	require.True(t, ran)

	running, finish := make(chan struct{}), make(chan struct{})
	type outcome struct {
		ran bool
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		ran, err := ex.Run(ctx, cfg("job"), func(context.Context) error { close(running); <-finish; return nil })
		done <- outcome{ran, err, time.Now()}
	}()
	<-running

	tx, err := admin.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx.Rollback()
	var got string
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT name FROM "+table+" WHERE name = ? FOR UPDATE", "held").Scan(&got))
	hung := make(chan struct{})
	go func() { defer close(hung); _, _ = ex.Run(ctx, cfg("held"), func(context.Context) error { return nil }) }()
	time.Sleep(300 * time.Millisecond) // let the attempt reach the row and hang on it

	finished := time.Now()
	close(finish)
	o := <-done
	require.NoError(t, o.err)
	assert.True(t, o.ran)
	took := o.at.Sub(finished)
	assert.Less(t, took, 2*time.Second, "the release took %v, waiting for the hung attempt's connection", took.Round(time.Millisecond))
	require.NoError(t, tx.Rollback())
	<-hung
}
