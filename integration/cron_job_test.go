package integration_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Three pods, each with its own cron and executor, wake on the same second: the
// job runs once per tick.
func TestCronThreeExecutorsOneRunPerTick(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		var mu sync.Mutex
		runs := map[int64]int{} // unix second of the tick -> runs
		enough := make(chan struct{})
		var crons []*cron.Cron
		var executors []*shedlock.Executor
		for range 3 {
			ex := shedlock.NewExecutor(newProvider(t))
			c := cron.New(cron.WithSeconds())
			// LockAtLeastFor covers the spread of the three pods' wake-ups.
			wrap := ex.WithLock("tick", 10*time.Second, 500*time.Millisecond)
			_, err := c.AddJob("* * * * * *", wrap(cron.FuncJob(func() {
				mu.Lock()
				defer mu.Unlock()
				runs[time.Now().Unix()]++
				if len(runs) == 3 {
					close(enough)
				}
			})))
			if err != nil {
				t.Fatal(err)
			}
			crons, executors = append(crons, c), append(executors, ex)
		}
		for _, c := range crons {
			c.Start()
		}
		select {
		case <-enough:
		case <-time.After(15 * time.Second):
			t.Fatal("no runs in 3 ticks within 15s")
		}
		for i, c := range crons {
			<-c.Stop().Done() // waits for jobs already started
			if err := executors[i].Stop(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for sec, n := range runs {
			if n != 1 {
				t.Errorf("tick %d ran %d times, want once", sec, n)
			}
		}
	})
}

func TestWithLockPanicsOnDuplicateName(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	wrap := ex.WithLock("job", time.Minute, 0)
	wrap(cron.FuncJob(func() {}))
	reused := mustPanic(t, "wrapper applied to a second job", func() { wrap(cron.FuncJob(func() {})) })
	if err, _ := reused.(error); errors.Is(err, shedlock.ErrDuplicateName) || !strings.Contains(fmt.Sprint(reused), "once per job") {
		t.Errorf("a reused wrapper is not a duplicate name; want a message saying to call WithLock once per job, got %v", reused)
	}
	mustPanic(t, "wrapper applied to a nil job", func() { ex.WithLock("nil-job", time.Minute, 0)(nil) })
	mustPanic(t, "second WithLock under one name", func() { ex.WithLock("job", time.Minute, 0) })
	mustPanic(t, "invalid config", func() { ex.WithLock("other", 0, 0) })
	if _, err := ex.Wrap(shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}, cron.FuncJob(func() {})); !errors.Is(err, shedlock.ErrDuplicateName) {
		t.Errorf("Wrap under a registered name: %v", err)
	}
}

// mustPanic runs fn and returns what it panicked with.
func mustPanic(t *testing.T, what string, fn func()) (value any) {
	t.Helper()
	defer func() {
		if value = recover(); value == nil {
			t.Errorf("%s: want a panic", what)
		}
	}()
	fn()
	return nil
}

// A ContextJob gets the task context; the lock is released when it returns.
func TestWrapPassesTaskContext(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	ex := shedlock.NewExecutor(store.Provider("a"))
	cfg := shedlock.LockConfig{Name: "ctxjob", LockAtMostFor: time.Minute}
	var got bool
	j, err := ex.Wrap(cfg, shedlock.JobFunc(func(ctx context.Context) error {
		_, got = ctx.Deadline()
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	j.Run()
	if !got {
		t.Error("ContextJob did not get the task context (no deadline)")
	}
	assertFree(t, store.Provider("b"), cfg)
}
