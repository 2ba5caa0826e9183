package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// runNows is how many run-nows each variant asks for.
const runNows = 100

// Five pod processes on each store, each an executor checking for run-now
// requests (WithRunNowCheck) with the same jobs: a job paused runs on no pod
// while every pod's attempts at several of its fire times are refused, and
// runs again once resumed; 100 run-nows of a job with no schedule of its own
// are exactly 100 completed runs, never two at once; and again with the pod
// of one run SIGKILLed mid-run: that run started and did not complete,
// another pod ran its request once its lock ran out, and the runs completed
// are 100. Counted from the journal the pods write.
func TestPodsPauseAndRunNow(t *testing.T) {
	eachStore(t, func(t *testing.T, s podStore) {
		began := time.Now()
		ps := newPodsOf(t, s)
		op := openStore(t, s, "operator")
		pods := ps.start(t, 5)
		t.Logf("%s: 5 pods ready in %v", s.Kind, time.Since(began).Round(time.Millisecond))
		t.Run("side by side", func(t *testing.T) {
			t.Run("paused", func(t *testing.T) {
				t.Parallel()
				pausedOnEveryPod(t, op, ps.journal, pods)
			})
			t.Run("run-nows", func(t *testing.T) {
				t.Parallel()
				runEach(t, op, ps, pods, reportJob, false)
			})
		})
		t.Run("run-nows, a pod killed", func(t *testing.T) {
			runEach(t, op, ps, pods, exportJob, true)
		})
		// Stopped, the pods have ended every run and written every line:
		// no run came after the counts above.
		for _, p := range pods {
			if p.cmd.ProcessState == nil {
				assert.True(t, p.stop(), "%s did not stop cleanly", p.name)
			}
		}
		entries := ps.journal.read(t)
		for job, hung := range map[string]int{reportJob.Name: 0, exportJob.Name: 1} {
			n := assertExactly(t, runsOf(entries, job), job, runNows)
			assert.Equal(t, hung, n.hung, "%s: runs hung", job)
		}
		t.Logf("%s: %v in all", s.Kind, time.Since(began).Round(time.Millisecond))
	})
}

// pausedOnEveryPod pauses tick (a fixed-delay loop) and every-second (a
// cron schedule) until resumed: each pod's attempts at three fire times or
// more of each are refused as paused, and no pod runs either (see
// refusedEverywhere); resumed, both run again.
func pausedOnEveryPod(t *testing.T, op store, j *journal, pods []*pod) {
	ctx := context.Background()
	jobs := []string{tickJob.Name, everySecondJob.Name}
	began := time.Now()
	for _, job := range jobs {
		poll(t, 30*time.Second, job+" running before the pause", func() bool { return total(j.runsSince(t, job, began)) > 0 })
	}
	for _, job := range jobs {
		require.NoError(t, op.Pause(ctx, job, time.Time{}))
	}
	paused := time.Now()
	for _, job := range jobs {
		refusedEverywhere(t, j, pods, job, paused, 3)
		info, err := op.Inspect(ctx, job)
		require.NoError(t, err)
		assert.True(t, info.Paused, "the store shows %s paused", job)
		assert.True(t, info.PausedUntil.IsZero(), "until resumed")
	}
	t.Logf("paused for %v: no run on %d pods; attempts refused as paused, every-second: %v, tick: %d",
		time.Since(paused).Round(time.Millisecond), len(pods), j.count(t, jPaused, everySecondJob.Name, paused),
		total(j.count(t, jPaused, tickJob.Name, paused)))

	for _, job := range jobs {
		require.NoError(t, op.Resume(ctx, job))
	}
	resumed := time.Now()
	for _, job := range jobs {
		poll(t, 30*time.Second, job+" running again", func() bool { return total(j.runsSince(t, job, resumed)) > 0 })
		assert.False(t, control(t, op, job).Paused)
	}
}

// refusedEverywhere waits until n attempts or more at job by each of pods,
// begun after paused (when the pause was made), have been refused as paused,
// and fails t if a pod began a run of job after its first refusal: a pod
// tries a job once at a time, so such a run took the lock despite the pause.
func refusedEverywhere(t *testing.T, j *journal, pods []*pod, job string, paused time.Time, n int) {
	t.Helper()
	poll(t, 30*time.Second, fmt.Sprintf("every pod's attempts at %d fire times of %s refused as paused", n, job), func() bool {
		refused := j.count(t, jPaused, job, paused)
		for _, p := range pods {
			if refused[p.name] < n {
				return false
			}
		}
		return true
	})
	entries := j.read(t)
	for _, p := range pods {
		first := slices.IndexFunc(entries, func(e entry) bool {
			return e.what == jPaused && e.job == job && e.pod == p.name && !e.at.Before(paused)
		})
		refusedAt := entries[first].at
		for _, e := range entries {
			if e.what == jStart && e.job == job && e.pod == p.name && e.at.After(refusedAt) {
				t.Errorf("%s began %s at %v, after its attempt was refused as paused at %v",
					p.name, job, e.at.Format(time.StampMicro), refusedAt.Format(time.StampMicro))
			}
		}
	}
}

// runEach asks for runNows runs of job (no schedule: only run-now runs it),
// from four operators at once, and waits until none is pending: exactly
// runNows runs completed, one at a time. With kill, the run begun after a third of them hangs (it
// takes the hang file), and its pod is SIGKILLed: that run never completes,
// its request stays, and another pod runs it once the lock has run out.
func runEach(t *testing.T, op store, ps podsOf, pods []*pod, job shedlock.LockConfig, kill bool) {
	ctx := context.Background()
	j := ps.journal
	require.Zero(t, total(j.runsSince(t, job.Name, time.Time{})), "%s runs only when asked", job.Name)
	began := time.Now()
	// Four operators at once, each asking a quarter: a SQLite file is one
	// writer at a time, and a hundred writers at once starve some past its
	// busy timeout.
	const askers = 4
	errs := make(chan error, askers)
	for range askers {
		go func() {
			var err error
			for i := 0; i < runNows/askers && err == nil; i++ {
				_, err = op.RunNow(ctx, job.Name)
			}
			errs <- err
		}()
	}
	for range askers {
		require.NoError(t, <-errs)
	}
	if kill {
		poll(t, 60*time.Second, "a third of the runs", func() bool { return total(j.count(t, jDone, job.Name, began)) >= runNows/3 })
		require.NoError(t, os.WriteFile(ps.hang, nil, 0o644))
		var hung entry
		poll(t, 30*time.Second, "a run hung", func() bool {
			entries := j.read(t)
			i := slices.IndexFunc(entries, func(e entry) bool { return e.what == jHang && e.job == job.Name })
			if i >= 0 {
				hung = entries[i]
			}
			return i >= 0
		})
		named(pods, hung.pod).kill()
		t.Logf("%s SIGKILLed %v into its run of %s", hung.pod, time.Since(hung.at).Round(time.Millisecond), job.Name)
	}
	poll(t, 90*time.Second, "every request run", func() bool {
		left, err := op.RunRequests(ctx, []string{job.Name})
		require.NoError(t, err)
		return left[job.Name] == 0
	})
	took := time.Since(began)
	runs := runsOf(j.read(t), job.Name)
	n := assertExactly(t, runs, job.Name, runNows)
	assertOneAtATime(t, runs, job)
	assert.Zero(t, control(t, op, job.Name).RunRequests)
	if kill {
		assert.Equal(t, 1, n.hung, "runs hung")
		if i := slices.IndexFunc(runs, func(r jobRun) bool { return r.hung }); i >= 0 {
			assert.True(t, runs[i].done.IsZero(), "the killed run completed")
		}
	}
	t.Logf("%d run-nows of %s: %d runs completed in %v on pods %v; %d runs found their request run elsewhere",
		runNows, job.Name, n.completed, took.Round(time.Millisecond),
		j.count(t, jDone, job.Name, began), total(j.count(t, jRunNowDone, job.Name, began)))
}

// control reads job's pause and run-nows from the store: none where a
// key-value store keeps nothing of it.
func control(t *testing.T, st store, job string) shedlock.Control {
	t.Helper()
	l, err := st.Inspect(context.Background(), job)
	if errors.Is(err, shedlock.ErrLockNotFound) {
		return shedlock.Control{}
	}
	require.NoError(t, err)
	return l.Control
}

// poll checks cond every 20 ms until it holds, failing t at the deadline.
func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond) // a poll with a deadline
	}
}
