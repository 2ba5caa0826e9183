package shedlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A job that may outlive its LockAtMostFor keeps its lock with keep-alive: the
// lock is extended while the task runs, and the task's deadline moves with it.
func ExampleWithKeepAlive() {
	store := shedlocktest.NewMemoryStore() // in a service: shedlock.NewMySQLProvider(db)
	ex := shedlock.NewExecutor(store.Provider("pod-a"), shedlock.WithKeepAlive())
	cfg := shedlock.LockConfig{Name: "outboxPollJob", LockAtMostFor: 300 * time.Millisecond}

	ran, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		select { // a poll slowed by the broker: over twice LockAtMostFor
		case <-time.After(700 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return context.Cause(ctx) // ErrLockLost if the lock was taken away
		}
	})
	fmt.Println(ran, err)
	// Output: true <nil>
}

// A task can extend its own lock by hand; its context's deadline follows.
func ExampleLockFromContext() {
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("pod-a"))
	cfg := shedlock.LockConfig{Name: "monthlyReport", LockAtMostFor: time.Minute}
	_, err := ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		before, _ := ctx.Deadline()
		lock, _ := shedlock.LockFromContext(ctx)
		if err := lock.Extend(ctx, time.Hour, 0); err != nil {
			return err // ErrLockLost: no longer ours, and ctx has ended
		}
		after, _ := ctx.Deadline()
		fmt.Println("deadline moved by about an hour:", after.Sub(before).Round(time.Hour))
		return nil
	})
	fmt.Println(err)
	// Output:
	// deadline moved by about an hour: 1h0m0s
	// <nil>
}

// Code that must only run under a lock says so; unit tests satisfy it with
// shedlocktest.LockedContext.
func ExampleAssertLocked() {
	cancelExpiredOrders := func(ctx context.Context) error {
		if err := shedlock.AssertLocked(ctx); err != nil {
			return err
		}
		return nil // ... the work
	}
	fmt.Println(errors.Is(cancelExpiredOrders(context.Background()), shedlock.ErrNotLocked))
	fmt.Println(cancelExpiredOrders(shedlocktest.LockedContext(context.Background())))
	// Output:
	// true
	// <nil>
}

// A listener sees every event of every run, from a goroutine of its own.
func ExampleWithListener() {
	store := shedlocktest.NewMemoryStore()
	ex := shedlock.NewExecutor(store.Provider("pod-a"),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			switch ev.Kind {
			case shedlock.EventSkipped:
				fmt.Println(ev.Config.Name, ev.Kind, ev.Skip)
			case shedlock.EventFinished:
				fmt.Println(ev.Config.Name, ev.Kind, ev.Result, ev.Duration > 0)
			default:
				fmt.Println(ev.Config.Name, ev.Kind)
			}
		})))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: time.Minute}
	_, _ = ex.Run(context.Background(), cfg, func(ctx context.Context) error {
		_, _ = ex.Run(ctx, cfg, func(context.Context) error { return nil }) // still running here: skipped
		return nil
	})
	_ = ex.Stop(context.Background()) // after Stop, every event has been delivered
	// Output:
	// job attempt
	// job acquired
	// job attempt
	// job skipped running_here
	// job finished ok true
	// job released
}
