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
// the window its fire time allows must not take a hold that outlasts the next
// fire time: on etcd, the hold left from the call (1.8s at */3, no skew) is
// below the minimum TTL of 2s. It used to take a hold worked out from the fire
// time, which the store counts from the attempt, so every on-time instance
// found the lock held at the next fire time. It is skipped as late (SkipLate)
// instead.
func TestScheduleLateCallHoldEndsBeforeNextFireTime(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	c := sharedCluster(t)
	env := newEnv()
	p := newProvider(t, newClient(t, c), env, "late-pod")
	other := newProvider(t, newClient(t, c), env, "on-time-pod")

	const late = 1200 * time.Millisecond
	type outcome struct {
		fire  time.Time
		ran   bool          // else skipped as late
		after time.Duration // from the fire time to the run or the skip
	}
	outcomes := make(chan outcome, 4)
	first := make(chan struct{})
	delayed := cron.WithChain(func(j cron.Job) cron.Job {
		return cron.FuncJob(func() {
			select {
			case <-first: // only the first call is made: no later run takes the lock
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
	ex := shedlock.NewExecutor(p, shedlock.WithListener(shedlock.ListenerFunc(func(ctx context.Context, ev shedlock.Event) {
		if ev.Kind == shedlock.EventSkipped {
			fire, _ := shedlock.FireTimeFromContext(ctx)
			if ev.Skip != shedlock.SkipLate {
				t.Errorf("fire time %s skipped as %v; want SkipLate", fire.Format("15:04:05.000"), ev.Skip)
			}
			outcomes <- outcome{fire, false, ev.Time.Sub(fire)}
		}
	})))
	cfg := shedlock.LockConfig{Name: "job", LockAtMostFor: 2 * time.Second}
	if _, err := ex.Schedule(cr, "*/3 * * * * *", cfg, func(ctx context.Context) error {
		fire, _ := shedlock.FireTimeFromContext(ctx)
		outcomes <- outcome{fire, true, time.Since(fire)}
		return nil
	}, shedlock.ClockSkew(0)); err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	cr.Start()
	t.Cleanup(func() {
		<-cr.Stop().Done()
		_ = ex.Stop(context.Background())
	})

	var o outcome
	select {
	case o = <-outcomes:
	case <-time.After(15 * time.Second):
		t.Fatal("the late call neither ran nor was skipped within 15s")
	}
	if o.ran {
		t.Logf("fire time %s ran %v late", o.fire.Format("15:04:05.000"), o.after.Round(time.Millisecond))
	} else {
		t.Logf("fire time %s skipped as late, %v after it", o.fire.Format("15:04:05.000"), o.after.Round(time.Millisecond))
	}
	next := o.fire.Add(3 * time.Second)
	// An instance on time fires the next fire time; etcd's leader looks for
	// ended leases every 500ms, so it is given that much, and more.
	time.Sleep(time.Until(next))
	deadline := next.Add(700 * time.Millisecond)
	for {
		l, err := other.TryLock(context.Background(), cfg)
		if err == nil {
			_ = l.Unlock(context.Background())
			break
		}
		if !errors.Is(err, shedlock.ErrNotAcquired) {
			t.Fatalf("TryLock: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run of fire time %s, begun %v late, still holds the lock %v after the next fire time %s: "+
				"its hold was to end the skew bound (0) before it",
				o.fire.Format("15:04:05.000"), o.after.Round(time.Millisecond),
				time.Since(next).Round(time.Millisecond), next.Format("15:04:05.000"))
		}
		time.Sleep(50 * time.Millisecond) // poll interval
	}
	if o.ran {
		t.Fatalf("fire time %s ran %v late on etcd, with no hold of at least the minimum TTL (2s) that ends "+
			"before the next fire time; want it skipped as late", o.fire.Format("15:04:05.000"), o.after.Round(time.Millisecond))
	}
}
