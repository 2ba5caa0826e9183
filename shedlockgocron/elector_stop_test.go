package shedlockgocron_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Leader.Stop waits for the gocron run its elector let start before it
// releases the lease: the next leader's scheduler never runs the job beside
// the old leader's run.
func TestElectorStopWaitsForRunningJob(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	a, err := shedlock.NewLeader(store.Provider("a"), "group", time.Minute, shedlock.WithLeaderRetryPeriod(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	b, err := shedlock.NewLeader(store.Provider("b"), "group", time.Minute, shedlock.WithLeaderRetryPeriod(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop(context.Background()); _ = b.Stop(context.Background()) })
	a.Start()
	waitFor(t, a.IsLeader)
	b.Start()

	started, stopping, overlapped := make(chan struct{}), make(chan struct{}), make(chan bool, 1)
	s, err := gocron.NewScheduler(shedlockgocron.SchedulerOptions(a)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown() })
	_, err = s.NewJob(gocron.OneTimeJob(gocron.OneTimeJobStartImmediately()), gocron.NewTask(func() {
		close(started)
		<-stopping
		// Finishing up after Stop began: b must not lead meanwhile.
		for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
			if b.IsLeader() {
				overlapped <- true
				return
			}
			time.Sleep(time.Millisecond) // a poll with a deadline
		}
		overlapped <- false
	}))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(context.Background()) }()
	close(stopping)
	if <-overlapped {
		t.Fatal("b led while a's gocron job still ran")
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	waitFor(t, b.IsLeader)
}
