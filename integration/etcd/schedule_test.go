package etcd_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/shedlocketcd"
)

// fireRun is one run of a Schedule'd job: the fire time it stands for, and
// when its task began.
type fireRun struct{ fire, began time.Time }

// scheduleOnePod adds spec to a started cron of one pod on p, with opts, and
// returns the runs as they happen, those of fire times before it was added
// (CatchUp's check at the start) left out.
func scheduleOnePod(t *testing.T, p *shedlocketcd.Provider, spec string, opts ...shedlock.JobOption) <-chan fireRun {
	t.Helper()
	ex := shedlock.NewExecutor(p, shedlock.WithExecutorLogger(slog.New(slog.NewTextHandler(testLog{t},
		&slog.HandlerOptions{Level: slog.LevelDebug}))))
	c := cron.New(cron.WithSeconds())
	runs := make(chan fireRun, 64)
	added := time.Now()
	_, err := ex.Schedule(c, spec, shedlock.LockConfig{Name: "job", LockAtMostFor: 10 * time.Second},
		func(ctx context.Context) error {
			fire, _ := shedlock.FireTimeFromContext(ctx)
			if !fire.Before(added) {
				runs <- fireRun{fire: fire, began: time.Now()}
			}
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

// testLog writes the executor's log to the test's.
type testLog struct{ t *testing.T }

func (w testLog) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
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

// Killing the cluster's leader gives every lease its full TTL again, so a
// run's hold, on a lease of its own, would outlive the next fire time; the
// releasing pod revokes that lease when the hold ends, and every fire time
// runs once (late, at a CatchUp retry, only where a request met the
// election). The pod's client is on the other members, and the kill comes
// between its requests.
func TestScheduleCatchUpAfterLeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("timed schedule run skipped in -short mode")
	}
	c := etcdcluster.New(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leader, followers := leaderAndFollowers(ctx, t, c)
	p := newProvider(t, newClientOn(t, followers...), newEnv(), "pod")
	runs := scheduleOnePod(t, p, "*/3 * * * * *", shedlock.CatchUp(time.Minute), shedlock.CatchUpRetry(time.Second))
	// The kill comes while an on-time run's hold is on its lease.
	var got []fireRun
	for start := time.Now(); len(got) == 0 || got[len(got)-1].began.Sub(got[len(got)-1].fire) > 300*time.Millisecond; {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("no run on time within 30s: %v", got)
		}
		got = append(got, collect(t, runs, 1, 30*time.Second)...)
	}
	got = got[len(got)-1:]
	// Once the release has moved the key to the lease of its hold: a request
	// in flight through an election waits for etcd's request timeout (7s at
	// its defaults), and the fire times it spans collapse into one catch-up.
	watcher := newClientOn(t, followers...)
	for moved := false; !moved; {
		r, err := watcher.Get(ctx, p.Key("job"))
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		moved = len(r.Kvs) == 1 && r.Kvs[0].ModRevision > r.Kvs[0].CreateRevision
		if !moved && time.Since(got[0].began) > 2*time.Second {
			t.Fatalf("the run's key was not moved to its hold's lease: %v", r.Kvs)
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	next, err := c.WaitLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed the leader %s %v after an on-time run began; %s leads %v later", leader.Name,
		killed.Sub(got[0].began).Round(time.Millisecond), next.Name, time.Since(killed).Round(time.Millisecond))

	// Every fire time from that run to four after the kill runs, once.
	deadline := time.After(time.Minute)
	for got[len(got)-1].fire.Before(killed.Add(12 * time.Second)) {
		select {
		case r := <-runs:
			got = append(got, r)
		case <-deadline:
			t.Fatalf("runs %v: the fire times after the kill did not all run within a minute", got)
		}
	}
	late := 0
	for i, r := range got {
		if r.began.Sub(r.fire) > 900*time.Millisecond {
			late++
		}
		t.Logf("fire time %s began %v after it", r.fire.Format("05.000"), r.began.Sub(r.fire).Round(time.Millisecond))
		if i > 0 {
			if gap := r.fire.Sub(got[i-1].fire); gap != 3*time.Second {
				t.Errorf("fire times %s and %s: %v apart, want 3s (skipped, or run twice)",
					got[i-1].fire.Format("05.000"), r.fire.Format("05.000"), gap)
			}
		}
	}
	t.Logf("%d runs, %d of them late (at a catch-up retry)", len(got), late)
	// And the job is back on its fire times: a late run's hold ends before
	// the next one all the same.
	for _, r := range got[len(got)-3:] {
		if late := r.began.Sub(r.fire); late > 900*time.Millisecond {
			t.Errorf("fire time %s, after the leader change, began %v after it: still late", r.fire.Format("05.000"), late)
		}
	}
}
