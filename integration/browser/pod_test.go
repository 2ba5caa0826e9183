package browser

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
)

// TestMain lets the test re-run its own binary as a pod.
func TestMain(m *testing.M) {
	if name := os.Getenv("SHEDLOCK_BROWSER_POD"); name != "" {
		if err := podMain(name, os.Getenv("SHEDLOCK_BROWSER_DB"), os.Getenv("SHEDLOCK_BROWSER_RUNS")); err != nil {
			fmt.Fprintln(os.Stderr, "pod:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The pods' jobs: tick, shared, every 100 ms; report, run only when asked
// (run-now); and one lock per pod, its own, held most of the time, so that
// the page shows each pod's processes alive.
var (
	tickJob   = shedlock.LockConfig{Name: "tick", LockAtMostFor: 5 * time.Second}
	reportJob = shedlock.LockConfig{Name: "report", LockAtMostFor: 5 * time.Second}
)

func ownJob(pod string) shedlock.LockConfig {
	return shedlock.LockConfig{Name: pod, LockAtMostFor: 2 * time.Second, LockAtLeastFor: 1500 * time.Millisecond}
}

// runLog records each run's start in the pod's file: "<job> <unix ns>".
type runLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *runLog) record(job string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, "%s %d\n", job, time.Now().UnixNano())
}

// podMain runs one pod until SIGTERM: its executor's jobs, and the run-nows
// it finds. It prints "ready" once its jobs are started.
func podMain(name, dsn, runsDir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := shedlock.NewSQLiteProvider(db, shedlock.WithLockedBy(name))
	if err != nil {
		return err
	}
	st, err := controlled(ctx, db, p)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(runsDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	runs := &runLog{f: f}
	ex := shedlock.NewExecutor(st)
	work := func(job string, d time.Duration) func(context.Context) error {
		return func(ctx context.Context) error {
			runs.record(job)
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
			return nil
		}
	}
	if err := ex.FixedDelay(tickJob, 100*time.Millisecond, work("tick", 30*time.Millisecond)); err != nil {
		return err
	}
	if err := ex.FixedDelay(ownJob(name), 200*time.Millisecond, work(name, 10*time.Millisecond)); err != nil {
		return err
	}
	ex.Start()
	go runNowLoop(ctx, ex, st, runs)
	fmt.Println("ready")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return ex.Stop(sctx)
}

// runNowLoop runs report once for each run-now request, as the executor's
// own check does (shedlock.RunRequester): it asks every 100 ms, and under the
// lock asks again, so that a request another pod has just run is not run
// twice, then marks one request run while it still holds the lock.
func runNowLoop(ctx context.Context, ex *shedlock.Executor, st store, runs *runLog) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pending, err := st.RunRequests(ctx, []string{reportJob.Name})
		if err != nil || pending[reportJob.Name] == 0 {
			continue
		}
		_, _ = ex.Run(ctx, reportJob, func(ctx context.Context) error {
			still, err := st.RunRequests(ctx, []string{reportJob.Name})
			if err != nil || still[reportJob.Name] == 0 {
				return err
			}
			runs.record(reportJob.Name)
			held, _ := shedlock.LockFromContext(ctx)
			return st.RunDone(ctx, reportJob.Name, held)
		})
	}
}
