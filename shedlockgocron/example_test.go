package shedlockgocron_test

import (
	"context"
	"database/sql"
	"log"
	"time"

	"github.com/go-co-op/gocron/v2"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
)

// Every pod runs the same scheduler; each tick, one of them runs the job. The
// lock is kept at least 30 s, longer than the pods' schedules differ and shorter
// than the job's interval.
func ExampleNewLocker() {
	db, err := sql.Open("mysql", "app@tcp(db:3306)/app") // import _ "github.com/go-sql-driver/mysql"
	if err != nil {
		log.Fatal(err)
	}
	provider, err := shedlock.NewMySQLProvider(db)
	if err != nil {
		log.Fatal(err)
	}
	locker, err := shedlockgocron.NewLocker(provider, 10*time.Minute, 30*time.Second,
		shedlockgocron.WithJob("outboxPollJob", time.Minute, 2*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) { /* cancel expired orders */ }),
		gocron.WithName("orderTimeoutCancelJob")) // the lock's name
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown() }()
}

// The pods share one leader per group; gocron runs the group's jobs on the
// pod that leads, and the leader's Stop waits for a run under way before it
// hands the lease over.
func ExampleSchedulerOptions() {
	var provider shedlock.LockProvider // shedlock.NewMySQLProvider(db), as above
	leader, err := shedlock.NewLeader(provider, "billing", 15*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	leader.Start()
	defer leader.Stop(context.Background()) // after s.Shutdown: the runs have ended
	s, err := gocron.NewScheduler(shedlockgocron.SchedulerOptions(leader)...)
	if err != nil {
		log.Fatal(err)
	}
	_, err = s.NewJob(gocron.DurationJob(time.Minute), gocron.NewTask(func() {
		ctx, leading := leader.Context() // ends when the term does
		if !leading {
			return
		}
		_ = ctx // write with shedlock.FenceFromContext(ctx)'s token
	}), gocron.WithName("invoicing"))
	if err != nil {
		log.Fatal(err)
	}
	s.Start()
	defer func() { _ = s.Shutdown() }()
}
