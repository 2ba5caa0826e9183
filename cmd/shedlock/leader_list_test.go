package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// A Leader's lease is a lock row like a job's: list shows it held by the
// leader's pod, and free once the leader stops.
func TestListShowsTheLeadersLease(t *testing.T) {
	forEachTable(t, func(t *testing.T, tbl testTable) {
		p := tbl.pod(t)
		leader, err := shedlock.NewLeader(p, "billingLeader", time.Minute,
			shedlock.WithLeaderLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		leader.Start()
		t.Cleanup(func() { _ = leader.Stop(context.Background()) })
		require.Eventually(t, leader.IsLeader, 10*time.Second, 5*time.Millisecond)

		r := runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		rows := parseTable(t, r.stdout)
		require.Len(t, rows, 1, r.stdout)
		assert.Equal(t, "billingLeader", rows[0]["NAME"])
		assert.Equal(t, "yes", rows[0]["HELD"])
		assert.True(t, ownedBy(rows[0]["LOCKED BY"], p), "held by %q", rows[0]["LOCKED BY"])

		require.NoError(t, leader.Stop(context.Background()))
		r = runCLI(t, "", tbl.args("list")...)
		require.Equal(t, 0, r.code, r.stderr)
		if tbl.keepsFree {
			rows = parseTable(t, r.stdout)
			require.Len(t, rows, 1, r.stdout)
			assert.Equal(t, "no", rows[0]["HELD"], "released on Stop")
		} else {
			assert.Contains(t, r.stdout, "no locks", "released on Stop")
		}
	})
}
