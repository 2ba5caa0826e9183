package shedlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Two pods campaign for one group's lease; the one that leads runs the
// group's cron jobs, each run under the leadership's context, at no
// statement per run. When it stops, the other leads within one retry period.
func ExampleLeader() {
	store := shedlocktest.NewMemoryStore() // in a service: shedlock.NewMySQLProvider(db)
	podA, _ := shedlock.NewLeader(store.Provider("pod-a"), "billing", 15*time.Second,
		shedlock.WithLeaderRetryPeriod(10*time.Millisecond))
	podB, _ := shedlock.NewLeader(store.Provider("pod-b"), "billing", 15*time.Second,
		shedlock.WithLeaderRetryPeriod(10*time.Millisecond))
	podA.Start()
	for !podA.IsLeader() { // a service does not wait: its jobs just skip until it leads
		time.Sleep(time.Millisecond)
	}
	podB.Start()

	// c := cron.New(cron.WithChain(podA.OnlyWhenLeading())); c.AddJob(...)
	report := podA.OnlyWhenLeading()(shedlock.JobFunc(func(ctx context.Context) error {
		fence, _ := shedlock.FenceFromContext(ctx) // pass it with every write the job makes
		fmt.Println("pod A reports, term", fence)
		return nil
	}))
	var _ cron.Job = report
	report.Run()
	fmt.Println("pod B leads:", podB.IsLeader())

	_ = podA.Stop(context.Background())
	for !podB.IsLeader() {
		time.Sleep(time.Millisecond)
	}
	ctx, _ := podB.Context()
	fence, _ := shedlock.FenceFromContext(ctx)
	fmt.Println("pod B leads, term", fence)
	_ = podB.Stop(context.Background())
	// Output:
	// pod A reports, term 1
	// pod B leads: false
	// pod B leads, term 2
}
