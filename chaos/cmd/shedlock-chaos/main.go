// Command shedlock-chaos is the long form of the multi-process test: it runs pod
// processes (itself, re-run as pods) that hold shedlock locks on one database,
// SIGKILLs and stops them for several minutes, restarts the database once, and
// prints what the journal shows. It exits 1 if any guarantee was broken.
//
// By default it starts a private MariaDB server (own port and data directory,
// so the shared server on 3306 is never touched) and restarts it mid-run. With
// -dsn it uses that server instead, without a database restart.
//
//	go run ./cmd/shedlock-chaos -duration 5m -pods 5
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/chaos"
	"github.com/shedlock-go/shedlock/internal/testkit/faultproxy"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
)

func main() {
	if chaos.IsPod() {
		os.Exit(chaos.PodMain())
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "shedlock-chaos:", err)
		os.Exit(1)
	}
}

func run() error {
	pods := flag.Int("pods", 5, "pod processes running at once")
	duration := flag.Duration("duration", 4*time.Minute, "how long to kill and stop pods")
	every := flag.Duration("every", 3*time.Second, "mean time between two kills or stops")
	dsn := flag.String("dsn", "", "use this server (no database restart) instead of a private one")
	port := flag.Int("port", 3399, "port of the private MariaDB server")
	netFaults := flag.Bool("net-faults", true, "put a fault proxy between each pod and the database")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	dir, err := os.MkdirTemp("", "shedlock-chaos-")
	if err != nil {
		return err
	}
	log.Info("working directory (pod logs, private database)", "dir", dir)

	var restartDB func(context.Context) error
	if *dsn == "" {
		srv, err := privatedb.Start(ctx, dir, *port)
		if err != nil {
			return fmt.Errorf("private MariaDB (use -dsn to run against an existing server): %w", err)
		}
		defer func() {
			if err := srv.Close(); err != nil {
				log.Error("stop private MariaDB", "error", err)
			}
		}()
		*dsn = srv.DSN()
		restartDB = func(ctx context.Context) error { return srv.Restart(ctx, 5*time.Second) }
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	table := fmt.Sprintf("shedlock_chaos_%d", time.Now().Unix())
	journal := table + "_journal"
	p, err := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
	if err != nil {
		return err
	}
	if err := errors.Join(p.EnsureTable(ctx), chaos.CreateJournal(ctx, db, journal)); err != nil {
		return err
	}
	defer func() {
		// On a server of the user's (-dsn), leave nothing behind.
		_, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+table+", "+journal)
	}()
	params := chaos.Params{
		LockAtMostFor:  5 * time.Second,
		LockAtLeastFor: 200 * time.Millisecond,
		Delay:          300 * time.Millisecond,
		WorkMin:        100 * time.Millisecond,
		WorkMax:        800 * time.Millisecond,
	}
	const slack = 2 * time.Second
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := chaos.SupervisorConfig{
		Spec:         chaos.PodSpec{Params: params, DSN: *dsn, Table: table, Journal: journal},
		Pods:         *pods,
		MinDuration:  *duration,
		MaxDuration:  *duration + time.Minute,
		Every:        *every,
		StopOneIn:    4,
		HolderShare:  0.6,
		RestartAfter: 500 * time.Millisecond,
		Settle:       params.LockAtMostFor + params.Delay + slack,
		Command:      func() *exec.Cmd { return exec.Command(self) },
		LogDir:       dir,
		DB:           db,
		Log:          log,
	}
	if restartDB != nil {
		cfg.DBRestartAt, cfg.RestartDB = *duration/2, restartDB
	}
	if *netFaults {
		proxies, err := startProxies(*dsn, *pods)
		if err != nil {
			return err
		}
		defer proxies.close()
		cfg.LockDSN, cfg.NetFault = proxies.dsn, proxies.fault
	}
	log.Info("chaos run starting", "pods", *pods, "duration", *duration, "table", table)
	events, end, err := chaos.Supervise(ctx, cfg)
	if err != nil {
		return err
	}
	runs, err := chaos.ReadJournal(ctx, db, journal)
	if err != nil {
		return err
	}
	rep := chaos.Analyze(runs, events, params, *pods, slack, end)
	fmt.Println(rep)
	if len(rep.Violations) > 0 || rep.HolderKills == 0 || rep.HolderStops == 0 {
		return fmt.Errorf("%d violations (holder kills %d, holder stops %d)", len(rep.Violations), rep.HolderKills, rep.HolderStops)
	}
	return nil
}

// proxies puts a fault proxy between each pod and the database, for the locks'
// connections (the journal's go direct, so that what it records is not lost).
type proxies struct {
	cfg *mysql.Config
	by  map[string]*faultproxy.Proxy
}

func startProxies(dsn string, pods int) (*proxies, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = time.Second, 3*time.Second, 3*time.Second
	ps := &proxies{cfg: cfg, by: map[string]*faultproxy.Proxy{}}
	for i := range pods {
		p, err := faultproxy.Start(cfg.Addr)
		if err != nil {
			ps.close()
			return nil, err
		}
		ps.by[fmt.Sprintf("pod-%d", i)] = p
	}
	return ps, nil
}

func (ps *proxies) dsn(pod string) string {
	c := ps.cfg.Clone()
	c.Addr = ps.by[pod].Addr()
	return c.FormatDSN()
}

// fault puts one random fault on pod's connections.
func (ps *proxies) fault(ctx context.Context, pod string) (string, error) {
	p := ps.by[pod]
	hold := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	switch rand.N(4) {
	case 0:
		return fmt.Sprintf("reset %d connections", p.ResetAll()), nil
	case 1:
		p.SetDown(true)
		hold(2 * time.Second)
		p.SetDown(false)
		return "database unreachable for 2s", nil
	case 2:
		p.SetLatency(100 * time.Millisecond)
		hold(3 * time.Second)
		p.SetLatency(0)
		return "100ms latency for 3s", nil
	default:
		forward := rand.N(2) == 0
		fired := p.ResetOnNextRequest(forward)
		select {
		case <-fired:
		case <-time.After(5 * time.Second):
			if p.Disarm() {
				// Left armed, it would fire later, outside the span the event records.
				return "reset on next request (did not fire; disarmed)", nil
			}
			// Taken by a request just now: its response is on the way, unless the
			// connection died first (the request's read timeout is 3s).
			select {
			case <-fired:
			case <-time.After(5 * time.Second):
				return "reset on next request (taken, response never came)", nil
			}
		case <-ctx.Done():
			return "", ctx.Err()
		}
		if forward {
			return "next request run, its response lost", nil
		}
		return "next request lost", nil
	}
}

func (ps *proxies) close() {
	for _, p := range ps.by {
		_ = p.Close()
	}
}
