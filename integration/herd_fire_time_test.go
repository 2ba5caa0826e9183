package integration_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// A herd can take longer to drain than LockAtLeastFor: the winner of a tick
// has run and its lock has run out by the time another pod reaches the job.
// An attempt that knows its fire time gives up once half of LockAtLeastFor
// has passed since then, so that it cannot run the same fire time twice.
func TestLateAttemptOfAFireTimeGivesUp(t *testing.T) {
	t.Parallel()
	admin := testdb.Open(t, nil)
	table := testdb.NewTable(t, admin)
	var mu sync.Mutex
	var skips []shedlock.SkipReason
	listen := shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
		if ev.Kind == shedlock.EventSkipped {
			mu.Lock()
			skips = append(skips, ev.Skip)
			mu.Unlock()
		}
	}))
	podA := shedlock.NewExecutor(newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)))
	podB := shedlock.NewExecutor(newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table)), listen)
	ctx := context.Background()
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute, LockAtLeastFor: 300 * time.Millisecond}
	fire := time.Now()
	tick := shedlock.ContextWithFireTime(ctx, fire)
	runs := 0
	task := func(context.Context) error { runs++; return nil }

	ran, err := podA.Run(tick, cfg, task)
	require.NoError(t, err)
	require.True(t, ran, "the first pod to reach the tick runs it")
	waitFree(t, admin, table, cfg.Name) // LockAtLeastFor has passed: the row is free

	ran, err = podB.Run(tick, cfg, task)
	require.NoError(t, err, "a late attempt is a skip, not an error")
	assert.False(t, ran, "a pod reaching the same fire time after its window must not run it again")
	assert.Equal(t, 1, runs)
	require.NoError(t, podB.Stop(ctx)) // delivers the events
	mu.Lock()
	assert.Equal(t, []shedlock.SkipReason{shedlock.SkipLate}, skips)
	mu.Unlock()

	// The next fire time, and a run that tells none, are not late.
	ran, err = podA.Run(shedlock.ContextWithFireTime(ctx, time.Now()), cfg, task)
	require.NoError(t, err)
	assert.True(t, ran)
	waitFree(t, admin, table, cfg.Name)
	ran, err = podA.Run(ctx, cfg, task)
	require.NoError(t, err)
	assert.True(t, ran)
}

// waitFree polls until name's lock is free by the database's clock.
func waitFree(t *testing.T, db *sql.DB, table, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var free bool
		err := db.QueryRow("SET STATEMENT time_zone = '+00:00' FOR SELECT lock_until <= UTC_TIMESTAMP(3) FROM "+
			table+" WHERE name = ?", name).Scan(&free)
		return err == nil && free
	}, 10*time.Second, 5*time.Millisecond)
}
