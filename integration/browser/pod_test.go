package browser

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
)

// The environment that makes this test binary a pod (besides podStore's).
const (
	envPod     = "SHEDLOCK_PODS_POD"     // the pod's name
	envJournal = "SHEDLOCK_PODS_JOURNAL" // the journal file every pod of a test appends to
	envHang    = "SHEDLOCK_PODS_HANG"    // a file: the export run that removes it hangs until killed
)

// TestMain lets the test re-run its own binary as a pod.
func TestMain(m *testing.M) {
	if name := os.Getenv(envPod); name != "" {
		if err := podMain(name); err != nil {
			fmt.Fprintln(os.Stderr, "pod:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	flag.Parse()
	sideBySide()
	os.Exit(m.Run())
}

// sideBySide lets the tests of every store run at once, unless -test.parallel
// says otherwise: they wait on pods, servers and clocks, not the CPU, and at
// GOMAXPROCS at a time (the default) two cores would run two stores at a
// time, for twice or more the wall time.
func sideBySide() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "16")
	}
}

// The pods' jobs, the same on every pod: tick, every 100 ms after the last
// run; everySecond, at each second's fire time; report and export, which
// have no schedule, so that only run-now runs them; and one lock per pod,
// its own, held most of the time, so that the page shows each pod alive.
var (
	tickJob        = shedlock.LockConfig{Name: "tick", LockAtMostFor: 5 * time.Second}
	everySecondJob = shedlock.LockConfig{Name: "every-second", LockAtMostFor: 5 * time.Second}
	reportJob      = shedlock.LockConfig{Name: "report", LockAtMostFor: 10 * time.Second}
	// export's run, hung and killed, holds its lock this long: the wait
	// before another pod runs its request.
	exportJob = shedlock.LockConfig{Name: "export", LockAtMostFor: 3 * time.Second}
)

func ownJob(pod string) shedlock.LockConfig {
	return shedlock.LockConfig{Name: pod, LockAtMostFor: 2 * time.Second, LockAtLeastFor: 1500 * time.Millisecond}
}

// everySecondSpec is the schedule of everySecondJob on store kind: every
// second, but every 3 s on etcd, whose leases last 2 s at least, in whole
// seconds: a fire time's hold must end before the next.
func everySecondSpec(kind string) string {
	if kind == etcdStore {
		return "*/3 * * * * *"
	}
	return "* * * * * *"
}

// runNowEvery is how often each pod asks its store for run-now requests.
const runNowEvery = 50 * time.Millisecond

// podMain runs one pod until SIGTERM: an executor on the store of its
// environment, checking for run-now requests, with the jobs above. Each task
// journals its start and, once it has worked, its end; the executor's
// listener journals each attempt skipped and each lock that ran out or was
// lost, but for the pod's own job. It
// prints "ready" once its jobs are started.
func podMain(name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	st, closeStore, err := podStoreFromEnv().open(name)
	if err != nil {
		return err
	}
	defer closeStore()
	j, err := openJournal(os.Getenv(envJournal), name)
	if err != nil {
		return err
	}
	defer j.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("pod", name)
	ex := shedlock.NewExecutor(st, shedlock.WithRunNowCheck(runNowEvery), shedlock.WithExecutorLogger(log),
		shedlock.WithListener(shedlock.ListenerFunc(func(_ context.Context, ev shedlock.Event) {
			// Its own lock, kept by LockAtLeastFor, is skipped five times a
			// second: of no interest.
			switch {
			case ev.Config.Name == name:
			case ev.Kind == shedlock.EventSkipped:
				j.note(ev.Skip.String(), ev.Config.Name, ev.Time)
			case slices.Contains(lockLostEvents, ev.Kind.String()):
				j.note(ev.Kind.String(), ev.Config.Name, ev.Time)
			}
		})))
	c := cron.New(cron.WithSeconds())
	if err := addJobs(ex, c, name, j); err != nil {
		return err
	}
	ex.Start()
	c.Start()
	fmt.Println("ready")
	<-ctx.Done()
	<-c.Stop().Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return ex.Stop(sctx)
}

// addJobs registers the pod's jobs on ex (and c, for the one on a schedule).
func addJobs(ex *shedlock.Executor, c *cron.Cron, pod string, j *journalWriter) error {
	work := func(job string, d time.Duration) func(context.Context) error {
		return func(ctx context.Context) error {
			j.note(jStart, job, time.Now())
			if job == exportJob.Name && os.Remove(os.Getenv(envHang)) == nil {
				j.note(jHang, job, time.Now())
				<-ctx.Done() // the test kills the pod first
				return context.Cause(ctx)
			}
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-t.C:
			}
			j.note(jDone, job, time.Now())
			return nil
		}
	}
	if err := ex.FixedDelay(tickJob, 100*time.Millisecond, work(tickJob.Name, 30*time.Millisecond)); err != nil {
		return err
	}
	if err := ex.FixedDelay(ownJob(pod), 200*time.Millisecond, work(pod, 10*time.Millisecond)); err != nil {
		return err
	}
	// The pods share one clock, and a statement is late past 300 ms only on
	// a machine far busier than the tests need.
	if _, err := ex.Schedule(c, everySecondSpec(podStoreFromEnv().Kind), everySecondJob, work(everySecondJob.Name, 10*time.Millisecond),
		shedlock.ClockSkew(300*time.Millisecond)); err != nil {
		return err
	}
	for _, cfg := range []shedlock.LockConfig{reportJob, exportJob} {
		// Wrapped, and given to no scheduler: run-now alone runs it.
		if _, err := ex.Wrap(cfg, shedlock.JobFunc(work(cfg.Name, 20*time.Millisecond))); err != nil {
			return err
		}
	}
	return nil
}
