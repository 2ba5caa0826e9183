package integration_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// A pod whose clock runs 2 s ahead or behind never leads beside another. With
// database time nothing reads the pods' clocks (the leader itself measures
// only elapsed time), so no skew can be applied; a store that compared the
// pods' clocks (the client-clock hook) lets the pod ahead take a lease its
// owner still acts on, which is what this test must be able to see.
func TestLeaderClockSkew(t *testing.T) {
	if testing.Short() {
		t.Skip("timed run skipped in -short mode")
	}
	t.Parallel()
	const lease = 3 * time.Second
	for _, tc := range []struct {
		name        string
		clientClock bool
		skewB       time.Duration
		wantOverlap bool
	}{
		{name: "ClientClockAhead", clientClock: true, skewB: 2 * time.Second, wantOverlap: true},
		{name: "ClientClockBehind", clientClock: true, skewB: -2 * time.Second},
		{name: "DatabaseTime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			table := testdb.NewFencedTable(t, testdb.Open(t, nil))
			var a, b shedlock.LockProvider
			if tc.clientClock {
				a = newClientClockProvider(testdb.Open(t, nil), table, "pod-a", 0)
				b = newClientClockProvider(testdb.Open(t, nil), table, "pod-b", tc.skewB)
			} else {
				a = newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
				b = newMySQLProvider(t, testdb.Open(t, nil), shedlock.WithTableName(table))
			}
			quiet := shedlock.WithLeaderLogger(slog.New(slog.DiscardHandler))
			// A renews late in its lease, so that a lease taken early from it is seen.
			la, err := shedlock.NewLeader(a, "group", lease, shedlock.WithLeaderRenewPeriod(2500*time.Millisecond),
				shedlock.WithLeaderRetryPeriod(20*time.Millisecond), quiet)
			require.NoError(t, err)
			lb, err := shedlock.NewLeader(b, "group", lease, shedlock.WithLeaderRetryPeriod(20*time.Millisecond), quiet)
			require.NoError(t, err)
			t.Cleanup(func() { _ = la.Stop(context.Background()); _ = lb.Stop(context.Background()) })
			la.Start()
			require.Eventually(t, la.IsLeader, 10*time.Second, time.Millisecond)
			lb.Start()
			overlap := false
			for end := time.Now().Add(lease + time.Second); time.Now().Before(end) && !overlap; {
				overlap = la.IsLeader() && lb.IsLeader()
				time.Sleep(time.Millisecond) // a poll with a deadline
			}
			assert.Equal(t, tc.wantOverlap, overlap, "both led at once")
		})
	}
}
