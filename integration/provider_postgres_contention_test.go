package integration_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Eight providers, each with its own pool and owner, compete for two names,
// with each driver and mode.
func TestPostgresContention(t *testing.T) {
	t.Parallel()
	for _, c := range pgClients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.RunContention(t, postgresStore(c, "", nil), shedlocktest.Contention{RunsPerName: 100})
		})
	}
}

// The same, with the providers' sessions in different TimeZones, on timestamp
// and on timestamptz columns.
func TestPostgresContentionMixedTimeZones(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, ddl string }{
		{"Timestamp", ""},
		{"Timestamptz", postgresDDL("varchar(64)", "timestamptz(3)", "timestamptz(3)", "varchar(255)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			shedlocktest.RunContention(t, postgresStore(pgxClient, tc.ddl, pgTestZones), shedlocktest.Contention{RunsPerName: 100})
		})
	}
}

// Under default_transaction_isolation serializable, pods racing for a lock see
// serialization failures: an acquisition's is "not acquired", never an error,
// and exclusion holds. A release's is sent again at once (see
// TestPostgresReleaseSerializationFailureSentAgain); one that fails that way
// four times running, as on a busy machine, goes on to the logged retry.
func TestPostgresContentionSerializable(t *testing.T) {
	t.Parallel()
	serializable := map[string]string{"default_transaction_isolation": "serializable"}
	for _, c := range []pgClient{pgxClient, libpqClient} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			logs := &logBuffer{}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			store := func(t *testing.T) shedlocktest.NewProviderFunc {
				table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
				return func(t *testing.T) shedlock.LockProvider {
					return newPostgresProvider(t, c.open(t, serializable), shedlock.WithTableName(table), shedlock.WithLogger(logger))
				}
			}
			shedlocktest.RunContention(t, store, shedlocktest.Contention{RunsPerName: 100})
			t.Logf("releases retried after a wait: %d", strings.Count(logs.String(), "release failed, retrying"))
		})
	}
}

// The serialization failure itself, made to happen: a pod in a serializable
// session starts its acquisition while another transaction holds the row with
// an uncommitted change. When that commits, PostgreSQL cannot serialize the
// pod's statement after it (40001): TryLock says ErrNotAcquired, and
// Executor.Run does not run the task and returns no error. In read committed
// the same pod waits and then sees the change.
func TestPostgresSerializationFailureIsNotAcquired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		isolation string
		wantTaken bool
	}{
		{"serializable", false},
		{"repeatable read", false},
		{"read committed", true},
	} {
		t.Run(tc.isolation, func(t *testing.T) {
			t.Parallel()
			for _, c := range []pgClient{pgxClient, libpqClient} {
				admin := testdb.OpenPostgres(t, testdb.PGX, nil)
				table := testdb.NewPostgresTable(t, admin)
				app := "shedlock_ser_" + randomHex(4)
				pod := newPostgresProvider(t, c.open(t, map[string]string{
					"default_transaction_isolation": tc.isolation, "application_name": app}), shedlock.WithTableName(table))
				cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
				_, err := admin.Exec("INSERT INTO "+table+" VALUES ($1, '2000-01-01', '2000-01-01', 'other-pod')", cfg.Name)
				require.NoError(t, err)
				ctx := context.Background()
				// First use (session and table checks) before the race, so that the
				// pod's next statement is the acquisition itself.
				_, err = pod.TryLock(ctx, shedlock.LockConfig{Name: "warm-up", LockAtMostFor: time.Millisecond})
				require.NoError(t, err)

				tx, err := admin.BeginTx(ctx, nil)
				require.NoError(t, err)
				_, err = tx.Exec("UPDATE "+table+" SET locked_by = 'other-pod-released' WHERE name = $1", cfg.Name)
				require.NoError(t, err)
				ran := make(chan struct{}, 1)
				type result struct {
					ran bool
					err error
				}
				done := make(chan result, 1)
				go func() {
					r, err := shedlock.NewExecutor(pod).Run(ctx, cfg, func(context.Context) error { ran <- struct{}{}; return nil })
					done <- result{r, err}
				}()
				waitForLockWait(t, admin, app)
				require.NoError(t, tx.Commit())
				res := <-done
				require.NoError(t, res.err, "%s: a serialization failure is not an error", c.name)
				assert.Equal(t, tc.wantTaken, res.ran, "%s: task ran", c.name)
				assert.Equal(t, tc.wantTaken, len(ran) == 1, "%s: task ran", c.name)
			}
		})
	}
}

// A release that meets a serialization failure is sent again at once, not
// left to the logged retry after a wait: a serializable pod's Unlock waits for
// the row behind a transaction that changes it (not its owner) and commits;
// PostgreSQL cannot serialize the waiting UPDATE after it (40001), and the
// release sent again finds the row as committed and frees it.
func TestPostgresReleaseSerializationFailureSentAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []pgClient{pgxClient, libpqClient} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			admin := testdb.OpenPostgres(t, testdb.PGX, nil)
			table := testdb.NewPostgresTable(t, admin)
			app := "shedlock_rel_" + randomHex(4)
			logs := &logBuffer{}
			pod := newPostgresProvider(t, c.open(t, map[string]string{
				"default_transaction_isolation": "serializable", "application_name": app}),
				shedlock.WithTableName(table), shedlock.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
			cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
			ctx := context.Background()
			l, err := pod.TryLock(ctx, cfg)
			require.NoError(t, err)

			tx, err := admin.BeginTx(ctx, nil)
			require.NoError(t, err)
			_, err = tx.Exec("UPDATE "+table+" SET locked_at = locked_at WHERE name = $1", cfg.Name)
			require.NoError(t, err)
			released := make(chan error, 1)
			go func() { released <- l.Unlock(ctx) }()
			waitForLockWait(t, admin, app)
			require.NoError(t, tx.Commit())
			require.NoError(t, <-released)
			assert.NotContains(t, logs.String(), "release failed, retrying", "sent again after a wait, not at once")
			other, err := newPostgresProvider(t, testdb.OpenPostgres(t, testdb.PGX, nil), shedlock.WithTableName(table)).
				TryLock(ctx, cfg)
			require.NoError(t, err, "released")
			require.NoError(t, other.Unlock(ctx))
		})
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
