package shedlock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// One run-now request is one run, even when the task fails: an operator who
// asks once for a job that fails (a bad input, a dependency down) must not
// get it run again at every check, on every pod, until it succeeds, with no
// call to withdraw the request (Controller has none; Pause only defers it).
// A run that dies with its pod is another matter: it never returns, and its
// request is left for another pod.
func TestRunNowOfAFailingTaskRunsOnce(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	quiet := shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	var runs atomic.Int64
	ex := shedlock.NewExecutor(store.Provider("a"), shedlock.WithRunNowCheck(10*time.Millisecond), quiet)
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	// Registered, never started: only run-now requests run it.
	err := ex.FixedDelay(shedlock.LockConfig{Name: "import", LockAtMostFor: time.Minute}, time.Hour,
		func(context.Context) error {
			runs.Add(1)
			return errors.New("the upstream file is not there")
		})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Provider("operator").(shedlock.Controller).RunNow(context.Background(), "import"); err != nil {
		t.Fatal(err)
	}
	requester := store.Provider("operator").(shedlock.RunRequester)
	deadline := time.Now().Add(3 * time.Second)
	for {
		left, err := requester.RunRequests(context.Background(), []string{"import"})
		if err != nil {
			t.Fatal(err)
		}
		if left["import"] == 0 && runs.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 3 s, %d runs of the failing task for one request, %d requests still pending",
				runs.Load(), left["import"])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Stop waits for the runs under way; the loop was never started, as meant.
	if err := ex.Stop(context.Background()); err != nil && !errors.Is(err, shedlock.ErrNotStarted) {
		t.Fatal(err)
	}
	if got := runs.Load(); got != 1 {
		t.Fatalf("%d runs for one run-now request", got)
	}
}
