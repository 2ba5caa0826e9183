package integration_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A task that calls runtime.Goexit ends the calling goroutine, as Goexit does,
// but not before its lock is released and its run counted as over: the lock is
// free long before LockAtMostFor, the name can run again, Stop has nothing to
// wait for, and the Goexit is logged.
func TestRunReleasesLockOnGoexit(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, logs := newLoggedExecutor(newProvider(t))
		ended := make(chan struct{})
		var pastRun atomic.Bool
		go func() {
			defer close(ended)
			_, _ = ex.Run(context.Background(), job, func(context.Context) error {
				runtime.Goexit()
				return nil
			})
			pastRun.Store(true) // Goexit ends this goroutine: never reached
		}()
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("the goroutine that called Run did not end within 10s")
		}
		assert.False(t, pastRun.Load(), "Goexit must still end the calling goroutine")

		assertFree(t, newProvider(t), job) // LockAtMostFor is 30s: free now only if released
		ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil })
		require.NoError(t, err)
		assert.True(t, ran, "the name must not stay marked as running in this process")
		ended2, cancel := context.WithCancel(context.Background())
		cancel()
		assert.NoError(t, ex.Stop(ended2), "nothing runs: Stop must not wait for the Goexit run")
		assert.Regexp(t, `level=ERROR msg=.*runtime\.Goexit.* lock=job`, logs.String())
	})
}

// A fixed-delay loop outlives a run whose task called runtime.Goexit, as a cron
// schedule does: that run's goroutine ends, its lock is released (the second run
// could not take it otherwise: LockAtMostFor is 30s), and the loop goes on.
func TestFixedDelayGoesOnAfterGoexit(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex, logs := newLoggedExecutor(newProvider(t))
		var runs atomic.Int32
		second := make(chan struct{})
		require.NoError(t, ex.FixedDelay(job, 10*time.Millisecond, func(context.Context) error {
			switch runs.Add(1) {
			case 1:
				runtime.Goexit()
			case 2:
				close(second)
			}
			return nil
		}))
		ex.Start()
		select {
		case <-second:
		case <-time.After(10 * time.Second):
			t.Fatalf("no second run within 10s after a Goexit (runs: %d)", runs.Load())
		}
		require.NoError(t, ex.Stop(context.Background()))
		assert.Regexp(t, `level=ERROR msg=.*runtime\.Goexit.* lock=job`, logs.String())
	})
}
