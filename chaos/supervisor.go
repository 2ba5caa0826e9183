package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// EventKind is what the supervisor did to a pod or to the database.
type EventKind string

// The events Analyze reads.
const (
	Kill      EventKind = "SIGKILL"
	Stop      EventKind = "SIGTERM"
	DBRestart EventKind = "db-restart"
	NetFault  EventKind = "net-fault"
)

// Event is one action of the supervisor, timed by the database clock: for Kill,
// after the process had died; for Stop, before the signal was sent; for DBRestart
// and NetFault, when the fault was over (the database answered again).
type Event struct {
	Kind EventKind
	Pod  string
	PID  int
	At   time.Time
	From time.Time // DBRestart and NetFault: when the fault began (before the database was stopped)
}

// Fault returns the span of a DBRestart or NetFault event.
func (e Event) Fault() (Fault, bool) {
	if e.Kind != DBRestart && e.Kind != NetFault {
		return Fault{}, false
	}
	from := e.From
	if from.IsZero() {
		from = e.At
	}
	return Fault{From: from, To: e.At, Outage: e.Kind == DBRestart}, true
}

// SupervisorConfig configures Supervise.
type SupervisorConfig struct {
	Spec         PodSpec                         // Pod is set per process
	Pods         int                             // how many pod processes run at once
	MinDuration  time.Duration                   // act at least this long
	MaxDuration  time.Duration                   // then until every pod ran every job and a kill and a stop hit a pod inside a run, at most this long
	Every        time.Duration                   // mean time between two actions
	StopOneIn    int                             // every StopOneIn-th action is a graceful stop
	HolderShare  float64                         // share of actions aimed at a pod running a job
	RestartAfter time.Duration                   // a pod stays down this long
	Settle       time.Duration                   // after the last action, jobs get this long to recover
	Command      func() *exec.Cmd                // a command that runs a pod once given Spec.Env()
	LogDir       string                          // pods' stderr goes to LogDir/pod-N.log
	DB           *sql.DB                         // the journal's database
	DBRestartAt  time.Duration                   // > 0: restart the database this long into the run
	RestartDB    func(ctx context.Context) error // how
	Log          *slog.Logger
	// LockDSN, if set, gives each pod the DSN it takes locks through.
	LockDSN func(pod string) string
	// NetFault, if set, is every third action: a fault on one pod's connections
	// to the database (it returns a description).
	NetFault func(ctx context.Context, pod string) (string, error)
}

type proc struct {
	pod  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// Supervise runs the pods, acts on them until the run is over, stops them all
// gracefully and returns its events and the database time at which it stopped
// acting (the end of what the journal can tell).
func Supervise(ctx context.Context, c SupervisorConfig) (events []Event, end time.Time, err error) {
	procs := make([]*proc, c.Pods)
	defer func() {
		// Whatever happened, no pod outlives the run.
		for _, p := range procs {
			if p != nil {
				err = errors.Join(err, p.stop(20*time.Second))
			}
		}
	}()
	for i := range procs {
		if procs[i], err = c.start(fmt.Sprintf("pod-%d", i)); err != nil {
			return nil, end, err
		}
	}
	begin := time.Now()
	dbRestarted := c.DBRestartAt <= 0
	var holderKills, holderStops int // as seen at the time; Analyze has the last word
	for n := 0; ; n++ {
		if err := sleep(ctx, c.Every/2+rand.N(c.Every)); err != nil {
			return events, end, err
		}
		elapsed := time.Since(begin)
		if !dbRestarted && elapsed >= c.DBRestartAt {
			dbRestarted = true
			ev, err := c.restartDB(ctx)
			if err != nil {
				return events, end, err
			}
			events = append(events, ev)
			continue
		}
		if elapsed >= c.MaxDuration ||
			elapsed >= c.MinDuration && dbRestarted && holderKills > 0 && holderStops > 0 && c.covered(ctx) {
			break
		}
		i := c.pickVictim(ctx, procs)
		if c.NetFault != nil && n%3 == 1 {
			from, err := DBNow(ctx, c.DB)
			if err != nil {
				return events, end, err
			}
			what, err := c.NetFault(ctx, procs[i].pod)
			if err != nil {
				return events, end, err
			}
			at, err := DBNow(ctx, c.DB)
			if err != nil {
				return events, end, err
			}
			events = append(events, Event{Kind: NetFault, Pod: procs[i].pod, PID: procs[i].cmd.Process.Pid, At: at, From: from})
			c.Log.Info("chaos", "event", NetFault, "pod", procs[i].pod, "fault", what, "elapsed", elapsed.Round(time.Second))
			continue
		}
		kind := Kill
		if c.StopOneIn > 0 && n%c.StopOneIn == c.StopOneIn-1 {
			kind = Stop
			i = c.waitHolder(ctx, procs, i) // a graceful stop of an idle pod shows nothing
		}
		pid := procs[i].cmd.Process.Pid
		if kind == Stop && c.openRuns(ctx, pid) > 0 {
			holderStops++
		}
		ev, err := c.act(ctx, procs[i], kind)
		if err != nil {
			return events, end, err
		}
		if kind == Kill && c.openRuns(ctx, pid) > 0 {
			holderKills++
		}
		events = append(events, ev)
		c.Log.Info("chaos", "event", ev.Kind, "pod", ev.Pod, "pid", ev.PID, "elapsed", elapsed.Round(time.Second))
		if err := sleep(ctx, c.RestartAfter); err != nil {
			return events, end, err
		}
		if procs[i], err = c.start(procs[i].pod); err != nil {
			return events, end, err
		}
	}
	if err := sleep(ctx, c.Settle); err != nil {
		return events, end, err
	}
	end, err = DBNow(ctx, c.DB)
	return events, end, err
}

func (c SupervisorConfig) start(pod string) (*proc, error) {
	cmd := c.Command()
	spec := c.Spec
	spec.Pod = pod
	if c.LockDSN != nil {
		spec.LockDSN = c.LockDSN(pod)
	}
	cmd.Env = append(os.Environ(), spec.Env()...)
	logf, err := os.OpenFile(filepath.Join(c.LogDir, pod+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("chaos: pod log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("chaos: start %s: %w", pod, err)
	}
	p := &proc{pod: pod, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait() // a killed pod exits non-zero: expected
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// act kills or stops p and waits for it to exit.
func (c SupervisorConfig) act(ctx context.Context, p *proc, kind EventKind) (Event, error) {
	ev := Event{Kind: kind, Pod: p.pod, PID: p.cmd.Process.Pid}
	if kind == Stop {
		at, err := DBNow(ctx, c.DB)
		if err != nil {
			return ev, err
		}
		ev.At = at
		return ev, p.stop(20 * time.Second)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return ev, fmt.Errorf("chaos: kill %s: %w", p.pod, err)
	}
	<-p.done
	at, err := DBNow(ctx, c.DB)
	ev.At = at
	return ev, err
}

// stop sends SIGTERM and waits; a pod that does not stop in time is killed and
// reported, since a graceful stop that hangs is a failure of its own.
func (p *proc) stop(timeout time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("chaos: stop %s: %w", p.pod, err)
	}
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("chaos: %s (pid %d) exited with %d after SIGTERM", p.pod, p.cmd.Process.Pid, code)
		}
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("chaos: %s (pid %d) did not stop within %v of SIGTERM", p.pod, p.cmd.Process.Pid, timeout)
	}
}

// pickVictim picks, HolderShare of the time, a pod running a job, waiting for
// one: where a lock outlives its run (etcd keeps a 100ms LockAtLeastFor for
// its 2s minimum TTL), pods run jobs a small share of the time, and a pod
// picked when none happened to be running rarely held a lock.
func (c SupervisorConfig) pickVictim(ctx context.Context, procs []*proc) int {
	if rand.Float64() < c.HolderShare {
		return c.waitHolder(ctx, procs, rand.N(len(procs)))
	}
	return rand.N(len(procs))
}

// openRuns counts the runs of pid that have not recorded their end.
func (c SupervisorConfig) openRuns(ctx context.Context, pid int) int {
	var n int
	if err := c.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+c.Spec.Journal+
		" WHERE pid = ? AND ended IS NULL", pid).Scan(&n); err != nil {
		return 0
	}
	return n
}

// waitHolder polls for a pod running a job, for up to 10s, and returns it, or
// otherwise if none was found.
func (c SupervisorConfig) waitHolder(ctx context.Context, procs []*proc, otherwise int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if i := c.pickHolder(ctx, procs, -1); i >= 0 {
			return i
		}
		if time.Now().After(deadline) || sleep(ctx, 20*time.Millisecond) != nil {
			return otherwise
		}
	}
}

// pickHolder returns a pod running a job now, or otherwise if none is.
func (c SupervisorConfig) pickHolder(ctx context.Context, procs []*proc, otherwise int) int {
	pids := make([]string, len(procs))
	byPID := make(map[int]int, len(procs))
	for i, p := range procs {
		pids[i] = fmt.Sprint(p.cmd.Process.Pid)
		byPID[p.cmd.Process.Pid] = i
	}
	var pid int
	err := c.DB.QueryRowContext(ctx, "SELECT pid FROM "+c.Spec.Journal+" WHERE ended IS NULL AND pid IN ("+
		strings.Join(pids, ",")+") ORDER BY started DESC LIMIT 1").Scan(&pid)
	if i, ok := byPID[pid]; err == nil && ok {
		return i
	}
	return otherwise
}

// covered reports whether every pod has run every job.
func (c SupervisorConfig) covered(ctx context.Context) bool {
	var n int
	err := c.DB.QueryRowContext(ctx, "SELECT COUNT(DISTINCT pod, job) FROM "+c.Spec.Journal).Scan(&n)
	return err == nil && n >= c.Pods*len(Jobs)
}

func (c SupervisorConfig) restartDB(ctx context.Context) (Event, error) {
	from, err := DBNow(ctx, c.DB)
	if err != nil {
		return Event{}, err
	}
	c.Log.Info("chaos: restarting the database")
	if err := c.RestartDB(ctx); err != nil {
		return Event{}, fmt.Errorf("chaos: restart database: %w", err)
	}
	// The pool's connections died with the server; the first query may find one.
	var at time.Time
	for range 5 {
		if at, err = DBNow(ctx, c.DB); err == nil {
			break
		}
	}
	return Event{Kind: DBRestart, At: at, From: from}, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
