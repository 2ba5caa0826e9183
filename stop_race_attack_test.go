package shedlock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Registrations of every kind, Jobs and Stop, all at once: every registration
// either succeeds or says ErrStopped, and once Stop has returned no task
// starts, whatever registered it.
func TestRegistrationRacingStopRunsNothingAfterStop(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		store := shedlocktest.NewMemoryStore()
		quiet := shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		ex := shedlock.NewExecutor(store.Provider("a"), quiet, shedlock.WithRunNowCheck(10*time.Millisecond))
		ex.Start()
		c := cron.New(cron.WithSeconds())
		c.Start()
		var stopped atomic.Bool
		var late atomic.Int64
		task := func(ctx context.Context) error {
			if stopped.Load() {
				late.Add(1)
			}
			return nil
		}
		var wg sync.WaitGroup
		errs := make(chan error, 400)
		for i := range 20 {
			wg.Add(4)
			go func() {
				defer wg.Done()
				errs <- ex.FixedDelay(shedlock.LockConfig{Name: fmt.Sprintf("fd-%d", i), LockAtMostFor: time.Second},
					time.Millisecond, task)
			}()
			go func() {
				defer wg.Done()
				j, err := ex.Wrap(shedlock.LockConfig{Name: fmt.Sprintf("wrap-%d", i), LockAtMostFor: time.Second},
					shedlock.JobFunc(task))
				if err == nil {
					_, err = c.AddJob("* * * * * *", j)
				}
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := ex.Schedule(c, "*/2 * * * * *", shedlock.LockConfig{Name: fmt.Sprintf("sched-%d", i), LockAtMostFor: time.Second}, task)
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_ = ex.Jobs()
				_, _ = store.Provider("op").(shedlock.Controller).RunNow(context.Background(), fmt.Sprintf("fd-%d", i))
			}()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := ex.Stop(ctx); err != nil {
			t.Fatalf("round %d: Stop: %v", round, err)
		}
		cancel()
		stopped.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, shedlock.ErrStopped) {
				t.Fatalf("round %d: a registration racing Stop: %v", round, err)
			}
		}
		// Anything registered before Stop closed the registry is listed; a
		// second Stop returns at once.
		_ = ex.Jobs()
		if err := ex.Stop(context.Background()); err != nil {
			t.Fatalf("round %d: second Stop: %v", round, err)
		}
		<-c.Stop().Done()
		if n := late.Load(); n != 0 {
			t.Fatalf("round %d: %d tasks started after Stop returned", round, n)
		}
	}
}
