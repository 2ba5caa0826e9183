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

// "Run now" on a Schedule'd job runs it now, not after the hold its last
// fire time's run keeps until just before the next fire time: for a daily
// job that ran at midnight the request would otherwise wait all day, shown
// pending, with no word why.
func TestRunNowOfAScheduledJobAfterItsFireTime(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	quiet := shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ex := shedlock.NewExecutor(store.Provider("a"), shedlock.WithRunNowCheck(10*time.Millisecond), quiet)
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	c := cron.New()
	var runs atomic.Int64
	id, err := ex.Schedule(c, "@every 1h", shedlock.LockConfig{Name: "hourly", LockAtMostFor: time.Minute},
		func(context.Context) error { runs.Add(1); return nil })
	if err != nil {
		t.Fatal(err)
	}
	c.Entry(id).Job.Run() // its fire time: runs, then holds the lock until the next one
	if runs.Load() != 1 {
		t.Fatalf("the fire time's run: %d runs", runs.Load())
	}
	if _, err := store.Provider("operator").(shedlock.Controller).RunNow(context.Background(), "hourly"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for runs.Load() < 2 {
		if time.Now().After(deadline) {
			left, _ := store.Provider("operator").(shedlock.RunRequester).RunRequests(context.Background(), []string{"hourly"})
			t.Fatalf("run-now request not run 3 s after it was asked (%d pending): the lock is held by the "+
				"fire time's hold until the next fire time", left["hourly"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
