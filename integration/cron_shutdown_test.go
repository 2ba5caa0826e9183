package integration_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// The documented shutdown order: ex.Stop first, which cancels the running cron
// job and releases its lock, then wait for cron's running jobs, which have ended.
// The job would otherwise run until its context ends (LockAtMostFor is 10
// minutes): Stop returning within its deadline is the proof it was cancelled.
func TestCronShutdownOrderCancelsRunningJob(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t))
		cfg := shedlock.LockConfig{Name: "report", LockAtMostFor: 10 * time.Minute}
		c := cron.New()
		started := make(chan struct{})
		cause := make(chan error, 1)
		var once sync.Once
		_, err := c.AddJob("@every 1s", ex.WithLock(cfg.Name, cfg.LockAtMostFor, cfg.LockAtLeastFor)(
			shedlock.JobFunc(func(ctx context.Context) error {
				once.Do(func() { close(started) })
				<-ctx.Done()
				select {
				case cause <- context.Cause(ctx):
				default:
				}
				return ctx.Err()
			})))
		require.NoError(t, err)
		c.Start()
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			c.Stop()
			t.Fatal("the cron job did not start within 10s")
		}

		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, ex.Stop(stopCtx), "1. ex.Stop cancels the running job and waits for it")
		select {
		case got := <-cause:
			assert.ErrorIs(t, got, shedlock.ErrStopped, "the job's context cause")
		default:
			t.Fatal("ex.Stop returned before the job saw its context end")
		}
		select {
		case <-c.Stop().Done(): // 2. cron has no job left to wait for
		case <-time.After(10 * time.Second):
			t.Fatal("cron still waits for its job after the executor stopped")
		}
		assertFree(t, newProvider(t), cfg) // released, not held for LockAtMostFor
	})
}
