package integration_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Each run starts at least delay after the previous one ended.
func TestFixedDelayWaitsAfterRunEnds(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t))
		const delay = 60 * time.Millisecond
		type span struct{ start, end time.Time }
		var mu sync.Mutex
		var runs []span
		three := make(chan struct{})
		err := ex.FixedDelay(job, delay, func(context.Context) error {
			s := span{start: time.Now()}
			time.Sleep(20 * time.Millisecond) // the job's own work
			s.end = time.Now()
			mu.Lock()
			defer mu.Unlock()
			runs = append(runs, s)
			if len(runs) == 3 {
				close(three)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ex.Start()
		select {
		case <-three:
		case <-time.After(10 * time.Second):
			t.Fatal("three runs did not happen within 10s")
		}
		if err := ex.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i := 1; i < len(runs); i++ {
			if gap := runs[i].start.Sub(runs[i-1].end); gap < delay {
				t.Errorf("run %d started %v after run %d ended, want >= %v", i, gap, i-1, delay)
			}
		}
	})
}

// Stop cancels a running task's context, waits for it, and its lock is released.
func TestStopCancelsWaitsAndReleases(t *testing.T) {
	forEachStore(t, func(t *testing.T, newProvider shedlocktest.NewProviderFunc) {
		ex := shedlock.NewExecutor(newProvider(t))
		started := make(chan struct{})
		returned := make(chan struct{})
		err := ex.FixedDelay(job, time.Hour, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, shedlock.ErrStopped) {
				t.Errorf("task context ended by Stop: cause %v, want ErrStopped", cause)
			}
			close(returned)
			return ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		ex.Start()
		<-started
		if err := ex.Stop(context.Background()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		select {
		case <-returned:
		default:
			t.Fatal("Stop returned before the task did")
		}
		assertFree(t, newProvider(t), job) // released at once, not after LockAtMostFor
		if ran, err := ex.Run(context.Background(), job, func(context.Context) error { return nil }); ran || !errors.Is(err, shedlock.ErrStopped) {
			t.Fatalf("Run after Stop: got (%v, %v), want (false, ErrStopped)", ran, err)
		}
	})
}

// A task that ignores its context makes Stop give up when its own context ends.
func TestStopGivesUpWithContext(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	started, unblock := make(chan struct{}), make(chan struct{})
	if err := ex.FixedDelay(job, time.Hour, func(context.Context) error {
		close(started)
		<-unblock
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ex.Start()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ex.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop: want DeadlineExceeded while the task runs, got %v", err)
	}
	close(unblock)
	if err := ex.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestFixedDelayRejectsDuplicatesAndBadInput(t *testing.T) {
	t.Parallel()
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	noop := func(context.Context) error { return nil }
	if err := ex.FixedDelay(job, time.Second, noop); err != nil {
		t.Fatal(err)
	}
	if err := ex.FixedDelay(job, time.Second, noop); !errors.Is(err, shedlock.ErrDuplicateName) {
		t.Errorf("second job under %q: want ErrDuplicateName, got %v", job.Name, err)
	}
	if _, err := ex.Wrap(job, cron.FuncJob(func() {})); !errors.Is(err, shedlock.ErrDuplicateName) {
		t.Errorf("cron job under a fixed-delay job's name: want ErrDuplicateName, got %v", err)
	}
	other := shedlock.LockConfig{Name: "other", LockAtMostFor: time.Second}
	for _, delay := range []time.Duration{0, -time.Second} {
		if err := ex.FixedDelay(other, delay, noop); !errors.Is(err, shedlock.ErrInvalidJob) || errors.Is(err, shedlock.ErrInvalidOption) {
			t.Errorf("delay %v: want ErrInvalidJob, got %v", delay, err)
		}
	}
	if err := ex.FixedDelay(other, time.Second, nil); !errors.Is(err, shedlock.ErrInvalidJob) {
		t.Errorf("nil task: want ErrInvalidJob, got %v", err)
	}
	if _, err := ex.Wrap(other, nil); !errors.Is(err, shedlock.ErrInvalidJob) {
		t.Errorf("nil cron job: want ErrInvalidJob, got %v", err)
	}
	if err := ex.FixedDelay(shedlock.LockConfig{Name: "x"}, time.Second, noop); !errors.Is(err, shedlock.ErrInvalidConfig) {
		t.Errorf("invalid config: %v", err)
	}
}

// Stop also ends tasks started by Run with a caller's context.
func TestStopCancelsRunWithCallerContext(t *testing.T) {
	t.Parallel()
	store := shedlocktest.NewMemoryStore()
	ex := shedlock.NewExecutor(store.Provider("a"))
	started := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		_, err := ex.Run(context.Background(), job, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			if cause := context.Cause(ctx); !errors.Is(cause, shedlock.ErrStopped) {
				t.Errorf("task context ended by Stop: cause %v, want ErrStopped", cause)
			}
			return ctx.Err()
		})
		result <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ex.Stop(ctx); err != nil {
		t.Fatalf("Stop did not end the running task: %v", err)
	}
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("task: want context.Canceled from Stop, got %v", err)
	}
	assertFree(t, store.Provider("b"), job)
}
