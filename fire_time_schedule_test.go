package shedlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocktest"
)

// A Schedule'd job's context carries its scheduled fire time, the same on
// every instance, with CatchUp or without: not the moment cron called it,
// which differs from pod to pod.
func TestScheduleFireTimeIsTheScheduledOne(t *testing.T) {
	ex := shedlock.NewExecutor(shedlocktest.NewMemoryStore().Provider("pod"))
	defer ex.Stop(context.Background())
	c := cron.New(cron.WithSeconds())
	type fired struct {
		name string
		at   time.Time
	}
	fires := make(chan fired, 16)
	for _, tc := range []struct {
		name string
		opts []shedlock.JobOption
	}{
		{"plain", []shedlock.JobOption{shedlock.ClockSkew(100 * time.Millisecond)}},
		{"catch-up", []shedlock.JobOption{shedlock.ClockSkew(100 * time.Millisecond), shedlock.CatchUp(time.Minute)}},
	} {
		if _, err := ex.Schedule(c, "* * * * * *", shedlock.LockConfig{Name: "fire-" + tc.name, LockAtMostFor: 10 * time.Second},
			func(ctx context.Context) error {
				fire, ok := shedlock.FireTimeFromContext(ctx)
				if !ok {
					t.Errorf("%s: no fire time in the task's context", tc.name)
				}
				select {
				case fires <- fired{tc.name, fire}:
				default:
				}
				return nil
			}, tc.opts...); err != nil {
			t.Fatal(err)
		}
	}
	c.Start()
	defer func() { <-c.Stop().Done() }()
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case f := <-fires:
			seen[f.name] = true
			if !f.at.Equal(f.at.Truncate(time.Second)) || f.at.After(time.Now()) {
				t.Errorf("%s: fire time %v: want the scheduled second, not the moment cron called the job",
					f.name, f.at.Format(time.RFC3339Nano))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the jobs did not both run: %v", seen)
		}
	}
}
