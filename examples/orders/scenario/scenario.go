// Package scenario runs the article's scale-out: several pods of the orders
// example as separate OS processes on one database, with a load generator, for a
// while; then it stops them gracefully and reads what happened from the tables.
// examples/demo (make demo) and the end-to-end tests both use it.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/shedlock-go/shedlock/examples/orders/shop"
)

// Config describes one run.
type Config struct {
	Binary      string // the orders binary (see Build)
	Driver, DSN string // as for shop.Open
	Locks       shop.LockStore
	Pods        int
	Duration    time.Duration
	NoLock      bool
	// Speedup divides the article's intervals and lock durations.
	Speedup      float64
	OrderTimeout time.Duration
	Latency      time.Duration // per published event and cancelled order
	LoadEvery    time.Duration // one new order this often
	LogDir       string        // each pod's log goes to LogDir/<pod>.log
	Progress     io.Writer     // a line every ProgressEvery; nil: silent
	// ProgressEvery defaults to 2s.
	ProgressEvery time.Duration
	// Until, when set, keeps the pods running past Duration until the tables
	// show what it asks for, or MaxDuration has passed (zero: no time past
	// Duration): a busy machine runs the jobs late, and a fixed time would
	// decide too early.
	Until       func(shop.Summary) bool
	MaxDuration time.Duration
}

// Demo returns the settings of the demo: the article's schedule sixty times
// faster (cancel every 1s, outbox every 83ms), orders unpaid for 1s cancelled.
func Demo(binary, driver, dsn, logDir string) Config {
	return Config{
		Binary: binary, Driver: driver, DSN: dsn, LogDir: logDir,
		Pods: 3, Duration: 20 * time.Second, Speedup: 60,
		OrderTimeout: time.Second, Latency: 2 * time.Millisecond, LoadEvery: 20 * time.Millisecond,
	}
}

// Build compiles the orders example into dir and returns the binary's path.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "orders")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/shedlock-go/shedlock/examples/orders")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("scenario: build orders: %w\n%s", err, out)
	}
	return bin, nil
}

// Run runs the scenario and returns the Summary read from the database.
func Run(ctx context.Context, c Config) (shop.Summary, error) {
	db, err := shop.Open(c.Driver, c.DSN)
	if err != nil {
		return shop.Summary{}, err
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		return shop.Summary{}, err
	}

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loadDone := make(chan error, 1)
	go func() {
		_, err := db.Generate(loadCtx, c.LoadEvery)
		loadDone <- err
	}()

	pods, err := c.startPods(ctx)
	runErr := err
	if err == nil {
		runErr = c.watch(ctx, db, pods)
	}
	stopLoad()
	runErr = errors.Join(runErr, stopPods(pods), <-loadDone)
	if runErr != nil {
		return shop.Summary{}, runErr
	}
	return db.Report(ctx)
}

type pod struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

func (c Config) startPods(ctx context.Context) ([]*pod, error) {
	var pods []*pod
	for i := 1; i <= c.Pods; i++ {
		p := &pod{name: "pod-" + strconv.Itoa(i), done: make(chan error, 1)}
		p.log = filepath.Join(c.LogDir, p.name+".log")
		f, err := os.Create(p.log)
		if err != nil {
			return pods, fmt.Errorf("scenario: %w", err)
		}
		args := []string{"-driver", c.Driver, "-dsn", c.DSN, "-pod", p.name,
			"-speedup", strconv.FormatFloat(c.Speedup, 'g', -1, 64),
			"-order-timeout", c.OrderTimeout.String(), "-latency", c.Latency.String()}
		if c.NoLock {
			args = append(args, "-no-lock")
		}
		for flag, v := range map[string]string{"-lock-store": c.Locks.Kind, "-lock-dsn": c.Locks.DSN,
			"-redis-addr": c.Locks.RedisAddr, "-redis-env": c.Locks.RedisEnv} {
			if v != "" {
				args = append(args, flag, v)
			}
		}
		p.cmd = exec.Command(c.Binary, args...) // not CommandContext: pods get SIGTERM, not SIGKILL
		p.cmd.Stdout, p.cmd.Stderr = f, f
		if err := p.cmd.Start(); err != nil {
			f.Close()
			return pods, fmt.Errorf("scenario: start %s: %w", p.name, err)
		}
		go func() {
			p.done <- p.cmd.Wait()
			f.Close()
		}()
		pods = append(pods, p)
	}
	return pods, nil
}

// watch waits for every pod to start, lets them run for c.Duration, and on
// until c.Until holds or c.MaxDuration has passed, printing progress; a pod
// that exits early ends the run with its log.
func (c Config) watch(ctx context.Context, db *shop.DB, pods []*pod) error {
	if err := waitStarted(ctx, pods); err != nil {
		return err
	}
	every := c.ProgressEvery
	if every <= 0 {
		every = 2 * time.Second
	}
	start := time.Now()
	end := time.NewTimer(c.Duration)
	defer end.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var check <-chan time.Time // after Duration, while Until does not hold
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-end.C:
			if c.Until == nil {
				return nil
			}
			poll := time.NewTicker(untilPoll)
			defer poll.Stop()
			check = poll.C
		case <-check:
			s, err := db.Report(ctx)
			if err != nil {
				return err
			}
			if c.Until(s) || time.Since(start) >= c.MaxDuration {
				return nil
			}
		case <-tick.C:
			c.progress(ctx, db, time.Since(start))
		}
		if err := exitedEarly(pods); err != nil {
			return err
		}
	}
}

// startedLine is what a pod logs once its jobs are scheduled.
const startedLine = `msg="pod started"`

// startTimeout bounds a pod's start: its setup and first statements, which a
// busy machine may hold back for seconds.
const startTimeout = time.Minute

// waitStarted waits until every pod has logged startedLine, so that the
// scenario's time counts from when all of them run their jobs: a pod still
// setting up its tables when the time is up would be stopped before it ran.
func waitStarted(ctx context.Context, pods []*pod) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		started := 0
		for _, p := range pods {
			if b, err := os.ReadFile(p.log); err == nil && strings.Contains(string(b), startedLine) {
				started++
			}
		}
		if started == len(pods) {
			return nil
		}
		if err := exitedEarly(pods); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("scenario: %d of %d pods started within %v: %w", started, len(pods), startTimeout, ctx.Err())
		case <-poll.C:
		}
	}
}

// exitedEarly returns an error with the log of a pod that has exited.
func exitedEarly(pods []*pod) error {
	for _, p := range pods {
		select {
		case err := <-p.done:
			p.done <- err // for stopPods
			return fmt.Errorf("scenario: %s exited early (%v):\n%s", p.name, err, tail(p.log))
		default:
		}
	}
	return nil
}

func (c Config) progress(ctx context.Context, db *shop.DB, elapsed time.Duration) {
	if c.Progress == nil {
		return
	}
	var runs, published, cancelled int
	err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM job_runs), (SELECT COUNT(*) FROM topic), "+
		"(SELECT COUNT(*) FROM orders WHERE status = ?)", shop.Cancelled).Scan(&runs, &published, &cancelled)
	if err != nil {
		fmt.Fprintf(c.Progress, "  %4.0fs  (progress query failed: %v)\n", elapsed.Seconds(), err)
		return
	}
	fmt.Fprintf(c.Progress, "  %4.0fs  job runs %5d   events published %6d   orders cancelled %5d\n",
		elapsed.Seconds(), runs, published, cancelled)
}

// untilPoll is how often the tables are read for Config.Until.
const untilPoll = 250 * time.Millisecond

// stopPods sends SIGTERM to every pod and waits for all to exit; a pod still
// running after 30s is killed and reported.
func stopPods(pods []*pod) error {
	for _, p := range pods {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	var errs []error
	deadline := time.After(30 * time.Second)
	for _, p := range pods {
		select {
		case err := <-p.done:
			if err != nil {
				errs = append(errs, fmt.Errorf("scenario: %s: %w:\n%s", p.name, err, tail(p.log)))
			}
		case <-deadline:
			_ = p.cmd.Process.Kill()
			errs = append(errs, fmt.Errorf("scenario: %s did not stop within 30s of SIGTERM", p.name))
		}
	}
	return errors.Join(errs...)
}

// tail returns the end of a log file, for error messages.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
