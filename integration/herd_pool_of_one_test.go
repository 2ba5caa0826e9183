package integration_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// WithMaxInFlight promises that a lock this instance holds is freed in one
// statement's time even while attempts hang on rows another transaction
// holds, by keeping a connection of the pool for releases. A pool of one
// connection has none to keep: an attempt hung on a row holds it, and a
// release waits for it. The executor says so, naming the fix, at
// construction, or at its first attempt when the pool is sized after it; a
// pool of two is not warned of.
func TestInFlightPoolOfOneWarns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.Open(t, nil)
	table := testdb.NewFencedTable(t, admin)
	const fix = "give the pool at least 2 connections"
	for _, tc := range []struct {
		name        string
		before      int // the pool's size at NewExecutor
		after       int // then, before the first attempt; 0: unchanged
		warned      bool
		warnedAtNew bool
	}{
		{name: "one", before: 1, warned: true, warnedAtNew: true},
		{name: "two", before: 2},
		{name: "one after NewExecutor", before: 4, after: 1, warned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := testdb.Open(t, nil)
			db.SetMaxOpenConns(tc.before)
			p := newMySQLProvider(t, db, shedlock.WithTableName(table))
			var logs bytes.Buffer // written by this goroutine alone: the warning is logged in the calls below
			ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			defer ex.Stop(ctx)
			assert.Equal(t, tc.warnedAtNew, strings.Contains(logs.String(), fix), "at NewExecutor: %s", logs.String())
			if tc.after > 0 {
				db.SetMaxOpenConns(tc.after)
			}
			ran, err := ex.Run(ctx, shedlock.LockConfig{Name: "pool-" + tc.name, LockAtMostFor: time.Minute},
				func(context.Context) error { return nil })
			require.NoError(t, err)
			assert.True(t, ran)
			assert.Equal(t, tc.warned, strings.Contains(logs.String(), fix), "after the first run: %s", logs.String())
			assert.LessOrEqual(t, strings.Count(logs.String(), fix), 1, "warned more than once")
		})
	}
}
