package integration_test

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// callCounter counts a provider's calls: each TryLock, Extend and Unlock of the
// MySQL provider is one statement once the name's row exists.
type callCounter struct {
	shedlock.LockProvider
	n atomic.Int64
}

func (c *callCounter) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	c.n.Add(1)
	l, err := c.LockProvider.TryLock(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return countedLock{l, &c.n}, nil
}

type countedLock struct {
	shedlock.Lock
	n *atomic.Int64
}

func (l countedLock) Extend(ctx context.Context, most, least time.Duration) error {
	l.n.Add(1)
	return l.Lock.Extend(ctx, most, least)
}

func (l countedLock) Unlock(ctx context.Context) error {
	l.n.Add(1)
	return l.Lock.Unlock(ctx)
}

// Statements per instance per minute on MariaDB: a leader renews about three
// times a lease, a follower tries once a retry period. The normal run uses a
// tenth of the default durations for a tenth of a minute; with
// SHEDLOCK_LEADER_DEFAULTS=1 it runs the defaults (15 s lease, 2 s retry) for
// a whole minute.
func TestLeaderStatementsPerMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("timed run skipped in -short mode")
	}
	lease, retry, window := 1500*time.Millisecond, 200*time.Millisecond, 6*time.Second
	if os.Getenv("SHEDLOCK_LEADER_DEFAULTS") == "1" {
		lease, retry, window = 15*time.Second, shedlock.DefaultLeaderRetryPeriod, time.Minute
	}
	db := testdb.Open(t, nil)
	table := testdb.NewFencedTable(t, db)
	quiet := shedlock.WithLeaderLogger(slog.New(slog.DiscardHandler))
	counters := make([]*callCounter, 3)
	leaders := make([]*shedlock.Leader, 3)
	for i := range counters {
		p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
		require.NoError(t, err)
		counters[i] = &callCounter{LockProvider: p}
		leaders[i], err = shedlock.NewLeader(counters[i], "group", lease, shedlock.WithLeaderRetryPeriod(retry), quiet)
		require.NoError(t, err)
		t.Cleanup(func() { _ = leaders[i].Stop(context.Background()) })
		leaders[i].Start()
		if i == 0 {
			require.Eventually(t, leaders[0].IsLeader, 10*time.Second, time.Millisecond)
		}
	}
	before := make([]int64, 3)
	for i, c := range counters {
		before[i] = c.n.Load()
	}
	timer := time.NewTimer(window) // the measurement's window
	<-timer.C
	require.True(t, leaders[0].IsLeader(), "the first stayed leader throughout")
	perMinute := func(i int) float64 {
		return float64(counters[i].n.Load()-before[i]) * float64(time.Minute) / float64(window)
	}
	scale := float64(15*time.Second) / float64(lease) // to the default lease
	t.Logf("lease %v, retry %v, %v: leader %.1f statements/min, followers %.1f and %.1f (at the default durations: %.0f, %.0f)",
		lease, retry, window, perMinute(0), perMinute(1), perMinute(2), perMinute(0)/scale, perMinute(1)/scale)
	// What the README claims is a cost: no more than a statement a renewal or
	// a retry. A busy machine makes each wait longer by its statement's time,
	// so fewer is no fault, down to half: an instance that stops trying fails.
	assert.LessOrEqual(t, perMinute(0), 15*scale, "leader: a renewal every lease/3, no more")
	assert.GreaterOrEqual(t, perMinute(0), 6*scale, "leader: it renews")
	for _, i := range []int{1, 2} {
		assert.LessOrEqual(t, perMinute(i), 36*scale, "follower %d: one statement per retry, no more", i)
		assert.GreaterOrEqual(t, perMinute(i), 15*scale, "follower %d: it keeps trying", i)
	}
}
