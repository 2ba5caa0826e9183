package shedlock_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Run-now requests made while a job is paused run nothing on any executor;
// once resumed, each runs exactly once across them.
func TestRunNowWhilePausedRunsNothingThenEachOnce(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	quiet := shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var runs, pausedSkips atomic.Int64
	listen := shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
		if ev.Kind == shedlock.EventSkipped && ev.Skip == shedlock.SkipPaused {
			pausedSkips.Add(1)
		}
	}))
	operator := store.Provider("operator").(shedlock.Controller)
	if err := operator.Pause(context.Background(), "Report", time.Time{}); err != nil {
		t.Fatal(err)
	}
	var executors []*shedlock.Executor
	for _, pod := range []string{"a", "b", "c"} {
		ex := shedlock.NewExecutor(store.Provider(pod), shedlock.WithRunNowCheck(10*time.Millisecond), quiet, listen)
		executors = append(executors, ex)
		ex.WithLock("Report", time.Minute, 0)(cron.FuncJob(func() { runs.Add(1) }))
	}
	const asked = 3
	for range asked {
		if _, err := operator.RunNow(context.Background(), "Report"); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, 10*time.Second, "paused skips", func() bool { return pausedSkips.Load() >= 9 })
	if n := runs.Load(); n != 0 {
		t.Fatalf("%d runs while paused", n)
	}
	if err := operator.Resume(context.Background(), "Report"); err != nil {
		t.Fatal(err)
	}
	requester := store.Provider("operator").(shedlock.RunRequester)
	poll(t, 10*time.Second, "requests run", func() bool {
		left, err := requester.RunRequests(context.Background(), []string{"Report"})
		return err == nil && left["Report"] == 0
	})
	for _, ex := range executors {
		if err := ex.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := runs.Load(); n != asked {
		t.Fatalf("%d runs for %d requests", n, asked)
	}
}

// poll calls cond until it holds, failing the test after within.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, within)
		}
		time.Sleep(time.Millisecond) // a poll with a deadline
	}
}
