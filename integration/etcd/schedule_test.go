package etcd_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// fireRun is one run of a Schedule'd job: the fire time it stands for, and
// when its task began.
type fireRun struct{ fire, began time.Time }

// scheduleOnePod adds spec to a started cron of one pod on p, with opts, and
// returns the runs as they happen.
func scheduleOnePod(t *testing.T, p *shedlocketcd.Provider, spec string, opts ...shedlock.JobOption) <-chan fireRun {
	t.Helper()
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.DiscardHandler)))
	c := cron.New(cron.WithSeconds())
	runs := make(chan fireRun, 64)
	_, err := ex.Schedule(c, spec, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Second},
		func(ctx context.Context) error {
			fire, _ := shedlock.FireTimeFromContext(ctx)
			runs <- fireRun{fire: fire, began: time.Now()}
			return nil
		}, opts...)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	c.Start()
	t.Cleanup(func() {
		<-c.Stop().Done()
		_ = ex.Stop(context.Background())
	})
	return runs
}

// collect returns the first n runs, or fails t at the deadline.
func collect(t *testing.T, runs <-chan fireRun, n int, within time.Duration) []fireRun {
	t.Helper()
	deadline := time.After(within)
	var out []fireRun
	for len(out) < n {
		select {
		case r := <-runs:
			out = append(out, r)
		case <-deadline:
			t.Fatalf("%d runs within %v, want %d: %v", len(out), within, n, out)
		}
	}
	return out
}

// One pod alone, short runs, every 3s: each fire time runs, at its time. The
// hold Schedule asks is whole seconds, as the store says it keeps it, so the
// lease ends before the next fire time; with CatchUp, no fire time waits for
// the retry.
func TestScheduleRunsEveryFireTime(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	c := sharedCluster(t)
	for _, tc := range []struct {
		name string
		opts []shedlock.JobOption
	}{
		{"Schedule", nil},
		{"CatchUp", []shedlock.JobOption{shedlock.CatchUp(time.Minute), shedlock.CatchUpRetry(2 * time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProvider(t, newClient(t, c), newEnv(), "pod")
			runs := collect(t, scheduleOnePod(t, p, "*/3 * * * * *", tc.opts...), 5, 30*time.Second)
			for i, r := range runs {
				if late := r.began.Sub(r.fire); late > 1500*time.Millisecond {
					t.Errorf("run %d began %v after its fire time %s", i, late, r.fire.Format("05.000"))
				}
				if i > 0 {
					if gap := r.fire.Sub(runs[i-1].fire).Round(time.Second); gap != 3*time.Second {
						t.Errorf("fire times %s and %s: %v apart, want 3s (fire times skipped)",
							runs[i-1].fire.Format("05.000"), r.fire.Format("05.000"), gap)
					}
				}
			}
		})
	}
}
