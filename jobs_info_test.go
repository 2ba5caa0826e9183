package shedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Jobs lists every registered job by name: a Schedule job with its cron's next
// fire time, a FixedDelay job with when its next run is due once started, a
// Wrap job with none; a job running now says so; a removed entry's name is
// gone once registered again elsewhere.
func TestJobsListsRegisteredJobsWithTheirNextFireTimes(t *testing.T) {
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("a"))
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	c := cron.New()
	c.Start()
	t.Cleanup(func() { <-c.Stop().Done() })
	running, release := make(chan struct{}), make(chan struct{})
	if _, err := ex.Schedule(c, "@every 1h", shedlock.LockConfig{Name: "hourly", LockAtMostFor: time.Minute},
		func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := ex.Wrap(shedlock.LockConfig{Name: "wrapped", LockAtMostFor: time.Minute}, cron.FuncJob(func() {})); err != nil {
		t.Fatal(err)
	}
	if err := ex.FixedDelay(shedlock.LockConfig{Name: "loop", LockAtMostFor: time.Minute}, time.Hour,
		func(context.Context) error {
			close(running)
			<-release
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	jobs := ex.Jobs()
	if len(jobs) != 3 || jobs[0].Name != "hourly" || jobs[1].Name != "loop" || jobs[2].Name != "wrapped" {
		t.Fatalf("Jobs() = %+v, want hourly, loop, wrapped", jobs)
	}
	if d := time.Until(jobs[0].Next); d < 59*time.Minute || d > time.Hour {
		t.Errorf("hourly's next fire time is %v from now, want about an hour", d)
	}
	if !jobs[1].Next.IsZero() || !jobs[2].Next.IsZero() {
		t.Errorf("a loop not started and a Wrap job have no next fire time: %+v", jobs)
	}
	ex.Start()
	<-running
	loop := ex.Jobs()[1]
	if !loop.Running || loop.Next.IsZero() {
		t.Errorf("the started loop: %+v, want running with its run's time", loop)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for loop = ex.Jobs()[1]; loop.Running || time.Until(loop.Next) < 59*time.Minute; loop = ex.Jobs()[1] {
		if time.Now().After(deadline) {
			t.Fatalf("after its run the loop is %+v, want not running, next in about an hour", loop)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
