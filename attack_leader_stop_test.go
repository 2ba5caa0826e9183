package shedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Stop's doc: the jobs run under the leadership are waited for, then the
// lease is released, "so that a follower leads within one retry period and no
// job of this instance runs beside its". Stop ends the campaign first, and
// with it the renewals: a job that takes longer than the lease to wind down
// after its context ended (a batch finishing, a flush) outlives the lease in
// the store, and the follower leads beside it while Stop still waits for it.
func TestAttackLeaderStopLetsLeaseLapseWhileWaitingForJobs(t *testing.T) {
	store := shedlocktest.NewMemoryStore()
	const lease = 300 * time.Millisecond
	a := newLeader(t, store.Provider("a"), lease, shedlock.WithRetryPeriod(10*time.Millisecond))
	b := newLeader(t, store.Provider("b"), lease, shedlock.WithRetryPeriod(10*time.Millisecond))
	a.Start()
	waitLeading(t, 5*time.Second, a)
	b.Start()
	started, overlapped := make(chan struct{}), make(chan bool, 1)
	job := a.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		close(started)
		<-ctx.Done()
		// Winding down for a few leases after Stop ended the term: b must not
		// lead meanwhile, since Stop waits for this job before it lets go.
		for end := time.Now().Add(5 * lease); time.Now().Before(end); {
			if b.IsLeader() {
				overlapped <- true
				return nil
			}
			time.Sleep(time.Millisecond) // a poll with a deadline
		}
		overlapped <- false
		return nil
	}))
	go job.Run()
	<-started
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(context.Background()) }()
	if <-overlapped {
		t.Fatalf("b led while a's job still ran and a.Stop still waited for it (lease %v): "+
			"Stop's wait let a's lease lapse in the store", lease)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}
