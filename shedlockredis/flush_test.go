package shedlockredis_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// TestFlushAllOverlapsUntilNextExtension measures what the package doc says of
// a key removed behind the holder's back: after a FLUSHALL another pod takes the
// lock at once, and the holder's task runs on until keep-alive's next extension
// finds the lock gone, at most a third of LockAtMostFor later.
func TestFlushAllOverlapsUntilNextExtension(t *testing.T) {
	t.Parallel()
	srv := startServerFor(t, "") // its own server: FLUSHALL would empty the others' keys
	c := redis.NewClient(&redis.Options{Addr: srv.addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	const mostFor = 3 * time.Second
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: mostFor}
	ex := shedlock.NewExecutor(newProvider(t, c), shedlock.WithKeepAlive(),
		shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)))
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })

	started := make(chan struct{})
	ended := make(chan error, 1)
	var endedAt time.Time
	go func() {
		_, _ = ex.Run(context.Background(), cfg, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			endedAt = time.Now()
			ended <- context.Cause(ctx)
			return nil
		})
	}()
	<-started
	ctx := context.Background()
	require.NoError(t, c.FlushAll(ctx).Err())
	other, err := newProvider(t, c).TryLock(ctx, cfg)
	require.NoError(t, err, "after FLUSHALL another pod takes the lock at once")
	takenAt := time.Now()

	var cause error
	select {
	case cause = <-ended:
	case <-time.After(mostFor):
		t.Fatal("the holder's task never learnt that its lock was gone")
	}
	overlap := endedAt.Sub(takenAt)
	t.Logf("both pods ran the job for %v (LockAtMostFor %v)", overlap.Round(time.Millisecond), mostFor)
	assert.ErrorIs(t, cause, shedlock.ErrLockLost)
	assert.Less(t, overlap, mostFor/3+500*time.Millisecond, "within a third of LockAtMostFor, and a round trip")
	require.NoError(t, other.Unlock(ctx))
}
