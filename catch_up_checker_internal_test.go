package shedlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

// heldStore is a FireLocker whose locks are always held elsewhere, with no
// fire time recorded: enough for Schedule to add a CatchUp job.
type heldStore struct{}

func (heldStore) TryLock(context.Context, LockConfig) (Lock, error) { return nil, ErrNotAcquired }

func (heldStore) TryLockFire(context.Context, LockConfig, time.Time) (FireLock, error) {
	return nil, ErrNotAcquired
}

func (heldStore) LastFire(context.Context, string) (time.Time, bool, error) {
	return time.Time{}, false, nil
}

// A retry delay that does not fit in the window would never retry a failed
// run: an explicit one is refused, and the default shrinks to half the window.
func TestCatchUpRetryFitsTheWindow(t *testing.T) {
	e := NewExecutor(heldStore{})
	defer e.Stop(context.Background())
	c := cron.New(cron.WithSeconds())
	cfg := LockConfig{Name: "job", LockAtMostFor: time.Minute}
	task := func(context.Context) error { return nil }
	for _, retry := range []time.Duration{time.Minute, 2 * time.Minute} {
		if _, err := e.Schedule(c, "0 0 * * * *", cfg, task, CatchUp(time.Minute), CatchUpRetry(retry)); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("CatchUp(1m) with CatchUpRetry(%v): %v, want ErrInvalidOption", retry, err)
		}
	}
	if len(c.Entries()) != 0 {
		t.Fatalf("a refused job left %d entries", len(c.Entries()))
	}
	id, err := e.Schedule(c, "0 0 * * * *", cfg, task, CatchUp(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if j := c.Entry(id).Job.(*scheduledJob); j.cu.retry != 15*time.Second {
		t.Errorf("CatchUp(30s) retries after %v; want half the window, 15s", j.cu.retry)
	}
}
