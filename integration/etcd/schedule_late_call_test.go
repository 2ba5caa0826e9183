package etcd_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
)

// A Schedule'd job that cron calls late (a busy or paused process) but within
// the window its fire time allows takes a hold on etcd that Schedule works out
// from the fire time and the store counts from the attempt: the hold outlasts
// the next fire time, which every on-time instance then finds held. Schedule
// promises a hold that ends the skew bound (here 0) before the next fire time.
func TestScheduleLateCallHoldEndsBeforeNextFireTime(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	c := sharedCluster(t)
	env := newEnv()
	p := newProvider(t, newClient(t, c), env, "late-pod")
	other := newProvider(t, newClient(t, c), env, "on-time-pod")

	const late = 1200 * time.Millisecond
	first := make(chan struct{})
	delayed := cron.WithChain(func(j cron.Job) cron.Job {
		return cron.FuncJob(func() {
			select {
			case <-first: // only the first call is late
				j.Run()
				return
			default:
			}
			close(first)
			fire := time.Now().Truncate(time.Second) // cron calls at the whole second
			time.Sleep(time.Until(fire.Add(late)))
			j.Run()
		})
	})
	cr := cron.New(cron.WithSeconds(), delayed)
	ex := shedlock.NewExecutor(p)
	type run struct{ fire, began time.Time }
	runs := make(chan run, 16)
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second}
	if _, err := ex.Schedule(cr, "*/3 * * * * *", cfg, func(ctx context.Context) error {
		fire, _ := shedlock.FireTimeFromContext(ctx)
		runs <- run{fire, time.Now()}
		return nil
	}, shedlock.ClockSkew(0)); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	cr.Start()
	t.Cleanup(func() {
		<-cr.Stop().Done()
		_ = ex.Stop(context.Background())
	})

	var r run
	select {
	case r = <-runs:
	case <-time.After(15 * time.Second):
		t.Fatal("no run within 15s")
	}
	t.Logf("fire time %s ran %v late", r.fire.Format("15:04:05.000"), r.began.Sub(r.fire).Round(time.Millisecond))
	next := r.fire.Add(3 * time.Second)
	// An instance on time fires the next fire time; etcd's leader looks for
	// ended leases every 500ms, so it is given that much, and more.
	time.Sleep(time.Until(next))
	deadline := next.Add(700 * time.Millisecond)
	for {
		l, err := other.TryLock(context.Background(), shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second})
		if err == nil {
			_ = l.Unlock(context.Background())
			return
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatalf("TryLock: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run of fire time %s, begun %v late, still holds the lock %v after the next fire time %s: "+
				"its hold was to end the skew bound (0) before it",
				r.fire.Format("15:04:05.000"), r.began.Sub(r.fire).Round(time.Millisecond),
				time.Since(next).Round(time.Millisecond), next.Format("15:04:05.000"))
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
}
