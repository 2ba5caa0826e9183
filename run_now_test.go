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

// slowTake takes its locks 5 ms after it is asked, as a store across a
// network does: long enough for another instance to run the last request
// between a check and the acquisition.
type slowTake struct {
	shedlock.LockProvider
	shedlock.RunRequester
}

func (s slowTake) TryLock(ctx context.Context, cfg shedlock.LockConfig) (shedlock.Lock, error) {
	time.Sleep(5 * time.Millisecond)
	return s.LockProvider.TryLock(ctx, cfg)
}

// Each run-now request is one run, across executors that check at once: a
// run made for a request that another executor ran meanwhile runs nothing.
// 30 requests asked at once, three executors checking every 10 ms on a store
// 5 ms away, a 5 ms task: exactly 30 runs, every time.
func TestRunNowRunsEachRequestOnceAcrossExecutors(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	quiet := shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var runs atomic.Int64
	var executors []*shedlock.Executor
	for _, pod := range []string{"a", "b", "c"} {
		p := store.Provider(pod)
		slow := slowTake{p, p.(shedlock.RunRequester)}
		ex := shedlock.NewExecutor(slow, shedlock.WithRunNowCheck(10*time.Millisecond), quiet)
		executors = append(executors, ex)
		ex.WithLock("report", time.Minute, 0)(cron.FuncJob(func() {
			runs.Add(1)
			time.Sleep(5 * time.Millisecond) // a task that takes a while: requests pile up behind it
		}))
	}
	operator := store.Provider("operator").(shedlock.Controller)
	const asked = 30
	for range asked {
		if _, err := operator.RunNow(context.Background(), "report"); err != nil {
			t.Fatal(err)
		}
	}
	requester := store.Provider("operator").(shedlock.RunRequester)
	deadline := time.Now().Add(20 * time.Second)
	for {
		left, err := requester.RunRequests(context.Background(), []string{"report"})
		if err != nil {
			t.Fatal(err)
		}
		if left["report"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests left after 20 s", left["report"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Stop waits for the runs under way: one made for a request already run
	// elsewhere would be among them.
	for _, ex := range executors {
		if err := ex.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := runs.Load(); got != asked {
		t.Fatalf("%d runs for %d run-now requests", got, asked)
	}
}
