package etcd_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
)

// Executors on three providers skip a paused job as SkipPaused, keep its
// run-now requests until Resume, and then run it until every request is
// marked run.
func TestExecutorPauseAndRunNowOnEtcd(t *testing.T) {
	c := sharedCluster(t)
	env := newEnv()
	ctx := context.Background()
	operator := newProvider(t, newClient(t, c), env, "operator")
	if err := operator.Pause(ctx, "job", time.Time{}); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	var runs, pausedSkips atomic.Int64
	task := func(context.Context) error { runs.Add(1); return nil }
	for _, owner := range []string{"pod-a", "pod-b", "pod-c"} {
		p := newProvider(t, newClient(t, c), env, owner)
		ex := shedlock.NewExecutor(p, shedlock.WithRunNowCheck(20*time.Millisecond),
			shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
				if ev.Kind == shedlock.EventSkipped && ev.Skip == shedlock.SkipPaused {
					pausedSkips.Add(1)
				}
			})))
		ex.WithLock("job", time.Minute, 0)(cron.FuncJob(func() { _ = task(ctx) })) // no schedule: run-now alone runs it
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		if ran, err := ex.Run(ctx, shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, task); err != nil || ran {
			t.Fatalf("Run of a paused job: ran %v, %v; want a skip", ran, err)
		}
	}
	waitFor(t, 10*time.Second, func() bool { return pausedSkips.Load() == 3 })

	const asked = 10
	for range asked {
		if _, err := operator.RunNow(ctx, "job"); err != nil {
			t.Fatalf("RunNow: %v", err)
		}
	}
	idle := time.Now().Add(500 * time.Millisecond) // some twenty checks on each executor
	for time.Now().Before(idle) {
		if n := runs.Load(); n != 0 {
			t.Fatalf("a paused job ran %d times on run-now requests", n)
		}
		time.Sleep(20 * time.Millisecond) // poll interval
	}
	if err := operator.Resume(ctx, "job"); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	waitFor(t, 60*time.Second, func() bool {
		left, err := operator.RunRequests(ctx, []string{"job"})
		if err != nil {
			t.Fatalf("RunRequests: %v", err)
		}
		return left["job"] == 0
	})
	// Each request marked run was run, and no more: a run that takes the lock
	// after another instance ran the last request runs nothing.
	if n := runs.Load(); n != asked {
		t.Fatalf("%d runs for %d requests marked run", n, asked)
	}
}
