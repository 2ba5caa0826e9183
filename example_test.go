package shedlock_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// Two pods share one lock store: the second finds the job running and skips it.
func ExampleExecutor_Run() {
	store := shedlocktest.NewMemoryStore() // in a service: shedlock.NewMySQLProvider(db)
	podA := shedlock.NewExecutor(store.Provider("pod-a"))
	podB := shedlock.NewExecutor(store.Provider("pod-b"))
	cfg := shedlock.LockConfig{Name: "orderTimeoutCancelJob", LockAtMostFor: 10 * time.Minute}

	ran, err := podA.Run(context.Background(), cfg, func(ctx context.Context) error {
		ranB, _ := podB.Run(ctx, cfg, func(context.Context) error { return nil })
		fmt.Println("pod B ran while pod A held the lock:", ranB)
		return nil
	})
	fmt.Println("pod A ran:", ran, err)
	// Output:
	// pod B ran while pod A held the lock: false
	// pod A ran: true <nil>
}

// A cron job bound to its own lock name.
func ExampleExecutor_WithLock() {
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("pod-a"))
	c := cron.New()
	_, err := c.AddJob("@every 1m", ex.WithLock("orderTimeoutCancelJob", 10*time.Minute, 30*time.Second)(
		shedlock.JobFunc(func(ctx context.Context) error {
			// cancel expired orders; ctx ends before the lock could expire
			return nil
		})))
	fmt.Println(err)
	// Output: <nil>
}

// Shutdown with cron, in the one order that works: Stop the executor first (it
// cancels the running jobs and releases their locks), then wait for cron's
// running jobs, which by then have ended. The other way round, cron waits for a
// job that nothing has told to stop.
func ExampleExecutor_Stop() {
	store := shedlocktest.NewMemoryStore() // in a service: shedlock.NewMySQLProvider(db)
	ex := shedlock.NewExecutor(store.Provider("pod-a"))
	c := cron.New()
	running := make(chan struct{})
	_, err := c.AddJob("@every 1s", ex.WithLock("monthlyReport", 10*time.Minute, 0)(
		shedlock.JobFunc(func(ctx context.Context) error {
			close(running)
			<-ctx.Done() // a long job that stops when its context ends
			fmt.Println("job stopped:", context.Cause(ctx))
			return ctx.Err()
		})))
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Start()
	<-running // in a service: <-ctx.Done() of signal.NotifyContext(ctx, syscall.SIGTERM)

	// Keep the whole shutdown within the pod's termination grace period.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	fmt.Println("executor stopped:", ex.Stop(ctx)) // 1. cancel running jobs, release their locks
	<-c.Stop().Done()                              // 2. no more ticks; running jobs have ended

	lock, err := store.Provider("pod-b").TryLock(context.Background(),
		shedlock.LockConfig{Name: "monthlyReport", LockAtMostFor: time.Minute})
	fmt.Println("another pod can take the lock at once:", err == nil)
	if err == nil {
		_ = lock.Unlock(context.Background())
	}
	// Output:
	// job stopped: shedlock: executor stopped
	// executor stopped: <nil>
	// another pod can take the lock at once: true
}

// The article's outbox poller: run, wait 5 s after it finishes, run again.
func ExampleExecutor_FixedDelay() {
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("pod-a"))
	done := make(chan struct{})
	cfg := shedlock.LockConfig{Name: "outboxPollingJob", LockAtMostFor: 5 * time.Minute, LockAtLeastFor: 4 * time.Second}
	err := ex.FixedDelay(cfg, 5*time.Second, func(ctx context.Context) error {
		fmt.Println("polling the outbox")
		close(done)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ex.Start()
	<-done
	fmt.Println(ex.Stop(context.Background()))
	// Output:
	// polling the outbox
	// <nil>
}

func ExampleNewMySQLProvider() {
	db, err := sql.Open("mysql", "root@tcp(127.0.0.1:3306)/test")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName("shedlock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	lock, err := p.TryLock(context.Background(), shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute})
	switch {
	case errors.Is(err, shedlock.ErrNotAcquired):
		return // another instance runs it
	case err != nil:
		fmt.Println(err)
		return
	}
	defer lock.Unlock(context.Background())
	// ... the job ...
}

// With pgx (import _ "github.com/jackc/pgx/v5/stdlib") or lib/pq (driver
// "postgres"); behind a pooler in transaction mode, pgx's simple protocol.
func ExampleNewPostgresProvider() {
	db, err := sql.Open("pgx", "postgres://app@db:5432/app?default_query_exec_mode=simple_protocol")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	p, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName("jobs.shedlock"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	ex := shedlock.NewExecutor(p)
	ran, err := ex.Run(context.Background(), shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute},
		func(ctx context.Context) error {
			// ... the job ...
			return nil
		})
	if err != nil {
		fmt.Println(err) // the store failed; the job did not run
	}
	_ = ran // false: another instance holds the lock
}

// Bad input is an error that names the lock and the field.
func ExampleLockConfig_Validate() {
	err := shedlock.LockConfig{Name: "report", LockAtMostFor: time.Minute, LockAtLeastFor: time.Hour}.Validate()
	fmt.Println(errors.Is(err, shedlock.ErrInvalidConfig))
	fmt.Println(err)
	// Output:
	// true
	// shedlock: invalid lock config: lock "report": LockAtLeastFor (1h0m0s) must not exceed LockAtMostFor (1m0s)
}
