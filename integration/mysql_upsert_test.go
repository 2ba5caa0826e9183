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

// A pod that keeps losing a name for longer than its LockAtMostFor (every tick
// of a one-minute job with LockAtMostFor up to a minute) still sends one
// statement per attempt: the upsert, not an INSERT before the UPDATE.
func TestMySQLLosingAttemptIsOneStatement(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	holder := newMySQLProvider(t, admin, shedlock.WithTableName(table))
	held, err := holder.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute})
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Unlock(context.Background()) })

	db := testdb.Open(t, nil)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	p := newMySQLProvider(t, db, shedlock.WithTableName(table))
	const most = time.Millisecond
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: most}
	ctx := context.Background()
	_, err = p.TryLock(ctx, cfg) // first use: checks, prepares
	require.ErrorIs(t, err, shedlock.ErrNotAcquired)

	const n = 20
	before := sessionCounters(t, db)
	for range n {
		// Past this pod's LockAtMostFor since it last saw the row: the attempt
		// that would once have inserted first.
		time.Sleep(2 * most)
		_, err := p.TryLock(ctx, cfg)
		require.ErrorIs(t, err, shedlock.ErrNotAcquired)
	}
	after := sessionCounters(t, db)
	assert.Equal(t, int64(n+1), after["Questions"]-before["Questions"], "statements for %d lost attempts (+ the SHOW)", n)
	assert.Equal(t, int64(n), after["Com_insert"]-before["Com_insert"], "one upsert per attempt")
	assert.Zero(t, after["Com_update"]-before["Com_update"], "no UPDATE besides")
	assert.Zero(t, after["Com_select"]-before["Com_select"], "no confirming SELECT")
}

// The upsert takes a row whose lock has run out, keeps a held one, and makes a
// row deleted by hand again at the next attempt, with and without
// clientFoundRows (under which a held row reports 1, as an insert does).
func TestMySQLUpsertOutcomes(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name   string
		params map[string]string
	}{{"ChangedRows", nil}, {"ClientFoundRows", map[string]string{"clientFoundRows": "true"}}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := testdb.Open(t, nil)
			table := testdb.NewTable(t, admin)
			p := newMySQLProvider(t, testdb.Open(t, v.params), shedlock.WithTableName(table))
			q := newMySQLProvider(t, testdb.Open(t, v.params), shedlock.WithTableName(table))
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}

			l, err := p.TryLock(ctx, cfg) // inserts
			require.NoError(t, err)
			for range 3 { // held: refused, whatever the count of rows says
				_, err = q.TryLock(ctx, cfg)
				require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			}
			require.NoError(t, l.Unlock(ctx))
			l, err = q.TryLock(ctx, cfg) // free: taken
			require.NoError(t, err)
			_, err = p.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			require.NoError(t, l.Unlock(ctx))

			_, err = admin.Exec("DELETE FROM "+table+" WHERE name = ?", cfg.Name)
			require.NoError(t, err)
			l, err = p.TryLock(ctx, cfg) // deleted by hand: made again at once
			require.NoError(t, err)
			_, err = q.TryLock(ctx, cfg)
			require.ErrorIs(t, err, shedlock.ErrNotAcquired)
			assert.Equal(t, 1, rowCount(t, admin, table))
			require.NoError(t, l.Unlock(ctx))
		})
	}
}
