package shedlockredis_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// TestExecutorPauseAndRunNowOnRedis: executors on three providers skip a
// paused job as SkipPaused, keep its run-now requests until Resume, and then
// run it until every request is marked run.
func TestExecutorPauseAndRunNowOnRedis(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	operator := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
	require.NoError(t, operator.Pause(ctx, "job", time.Time{}))
	var runs, pausedSkips atomic.Int64
	task := func(context.Context) error { runs.Add(1); return nil }
	executors := make([]*shedlock.Executor, 3)
	for i := range executors {
		p := newProvider(t, newClient(t), shedlockredis.WithEnv(env))
		ex := shedlock.NewExecutor(p, shedlock.WithRunNowCheck(10*time.Millisecond),
			shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
				if ev.Kind == shedlock.EventSkipped && ev.Skip == shedlock.SkipPaused {
					pausedSkips.Add(1)
				}
			})))
		ex.WithLock("job", time.Minute, 0)(cron.FuncJob(func() { _ = task(ctx) })) // no schedule: run-now alone runs it
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		executors[i] = ex
	}
	for _, ex := range executors {
		ran, err := ex.Run(ctx, shedlock.LockConfig{Name: "other-paused-check", LockAtMostFor: time.Minute}, task)
		require.NoError(t, err)
		require.True(t, ran, "a name not paused runs")
	}
	require.NoError(t, operator.Pause(ctx, "other-paused-check", time.Time{}))
	for _, ex := range executors {
		ran, err := ex.Run(ctx, shedlock.LockConfig{Name: "other-paused-check", LockAtMostFor: time.Minute}, task)
		require.NoError(t, err, "a paused job is a skip, not an error")
		require.False(t, ran)
	}
	waitFor(t, "each executor's skip, as SkipPaused", 10*time.Second, func(context.Context) (bool, error) {
		return pausedSkips.Load() == 3, nil // the events come through the executor's queue
	})

	const asked = 20
	for range asked {
		_, err := operator.RunNow(ctx, "job")
		require.NoError(t, err)
	}
	runs.Store(0)
	idle := time.Now().Add(300 * time.Millisecond) // some thirty checks on each executor
	for time.Now().Before(idle) {
		require.Zero(t, runs.Load(), "a paused job ran on a run-now request")
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	left, err := operator.RunRequests(ctx, []string{"job"})
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"job": asked}, left, "a pause keeps the requests")

	require.NoError(t, operator.Resume(ctx, "job"))
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := operator.RunRequests(ctx, []string{"job"})
		require.NoError(t, err)
		if left["job"] == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d requests left after Resume", left["job"])
		time.Sleep(10 * time.Millisecond) // poll interval
	}
	// Each request marked run was run, and no more: a run that takes the lock
	// after another instance ran the last request runs nothing.
	t.Logf("%d runs for %d requests", runs.Load(), asked)
	require.Equal(t, int64(asked), runs.Load(), "each run-now request is one run")
}
