package shedlock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A nightly report whose pods were all down at its fire time runs once when a
// pod is back, within the window; several missed nights would still run once.
func ExampleCatchUp() {
	store := shedlocktest.NewMemoryStore() // in a service: a SQL provider on a table with migration 0003, or shedlockredis
	ex := shedlock.NewExecutor(store.Provider("pod-a"))
	c := cron.New(cron.WithSeconds())
	ran := make(chan time.Time, 1)
	// Hourly: the last hour's fire time passed while no pod was up.
	_, err := ex.Schedule(c, "0 0 * * * *", shedlock.LockConfig{Name: "nightlyReport", LockAtMostFor: 10 * time.Minute},
		func(ctx context.Context) error {
			fire, _ := shedlock.FireTimeFromContext(ctx)
			ran <- fire
			return nil
		}, shedlock.CatchUp(2*time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Start()
	fire := <-ran
	fmt.Println("caught up the last hour's fire time:", fire.Equal(time.Now().Truncate(time.Hour)))
	<-c.Stop().Done()
	_ = ex.Stop(context.Background())
	// Output:
	// caught up the last hour's fire time: true
}
