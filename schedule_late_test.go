package shedlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A pod whose cron calls the job within the skew bound of the next fire time
// (a process paused or starved for most of the interval) is late for its fire
// time: it skips it. It used to compute a hold of at most zero, fall back to
// LockAtLeastFor 0, lose the late-attempt window with it, take the lock the
// first pod's hold had just freed, and run the fire time a second time.
func TestScheduleCallWithinTheSkewOfTheNextFireTimeIsLate(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	const spec = "*/4 * * * * *" // 4 s apart: more than twice the 500 ms bound
	var mu sync.Mutex
	runs := map[time.Time][]string{}
	jobs := map[string]cron.Job{}
	for _, pod := range []string{"a", "b"} {
		ex := shedlock.NewExecutor(store.Provider(pod))
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
		c := cron.New(cron.WithSeconds()) // not started: the test is cron, calling each pod's job when it would
		id, err := ex.Schedule(c, spec, shedlock.LockConfig{Name: "late-report", LockAtMostFor: time.Minute},
			func(ctx context.Context) error {
				fire, _ := shedlock.FireTimeFromContext(ctx)
				mu.Lock()
				runs[fire] = append(runs[fire], pod)
				mu.Unlock()
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		jobs[pod] = c.Entry(id).Job
	}
	sched, err := cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow).Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	fire := sched.Next(time.Now())
	next := sched.Next(fire)
	sleepUntil(fire.Add(50 * time.Millisecond))
	jobs["a"].Run() // on time: runs fire, holds the lock until 500 ms before next
	sleepUntil(next.Add(-300 * time.Millisecond))
	jobs["b"].Run() // late: cron fires fire on b 3.7 s after it, still before next

	mu.Lock()
	defer mu.Unlock()
	if got := runs[fire]; len(got) != 1 {
		t.Fatalf("fire time %s ran %d times (pods %v); Schedule promises at most once across the fleet",
			fire.Format(time.TimeOnly), len(got), got)
	}
}

// sleepUntil waits for a moment of the wall clock: the scenario is about when
// a pod's cron calls its job.
func sleepUntil(at time.Time) {
	<-time.After(time.Until(at))
}
