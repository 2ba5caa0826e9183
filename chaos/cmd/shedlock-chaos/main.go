// Command shedlock-chaos is the long form of the multi-process test: it runs pod
// processes (itself, re-run as pods) that hold shedlock locks in one store,
// SIGKILLs and stops them for several minutes, puts network faults between them
// and the store, restarts the store once where that is safe, and prints what
// the journal shows. It exits 1 if any guarantee was broken.
//
// The journal is always in MySQL/MariaDB: by default a private MariaDB server
// (own port and data directory, so the shared server on 3306 is never
// touched), or -dsn. The locks are in -store:
//
//	mysql     the journal's server; the private one is restarted mid-run
//	postgres  a private PostgreSQL cluster, restarted mid-run; or -store-dsn
//	redis     a private redis-server, never restarted; or -store-dsn
//	sqlite    a file that every pod opens; no network, no restart
//	etcd      a private three-member cluster, its leader SIGKILLed and restarted
//	          mid-run; or -store-dsn (endpoints, comma-separated URLs)
//
//	go run ./cmd/shedlock-chaos -duration 5m -pods 5 -store postgres
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the journal

	"github.com/shedlock-go/shedlock/chaos"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
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
	storeName := flag.String("store", string(chaos.MySQL), fmt.Sprintf("where the pods take their locks: one of %v", chaos.Stores))
	dsn := flag.String("dsn", "", "the journal's MySQL/MariaDB (and the locks' with -store mysql), without a restart; default: a private server")
	port := flag.Int("port", 3399, "port of the private MariaDB server")
	storeDSN := flag.String("store-dsn", "", "postgres: a URL; redis: host:port; sqlite: a file; etcd: endpoints, comma-separated URLs; "+
		"default: a private server (PostgreSQL restarted mid-run), or a file in the working directory")
	storePort := flag.Int("store-port", 0, "port of the private PostgreSQL or Redis server (default 5499, 6399)")
	netFaults := flag.Bool("net-faults", true, "put a fault proxy between each pod and the lock store")
	flag.Parse()
	store, err := chaos.ParseStore(*storeName)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	dir, err := os.MkdirTemp("", "shedlock-chaos-")
	if err != nil {
		return err
	}
	log.Info("working directory (pod logs, private servers)", "dir", dir)

	var restartStore func(context.Context) error
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
		if store == chaos.MySQL {
			restartStore = func(ctx context.Context) error { return srv.Restart(ctx, 5*time.Second) }
		}
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()

	ls, err := openLockStore(ctx, store, *storeDSN, *dsn, *storePort, dir)
	if err != nil {
		return err
	}
	defer func() {
		if err := ls.close(); err != nil {
			log.Error("stop the lock store", "error", err)
		}
	}()
	if ls.restart != nil {
		restartStore = ls.restart
	}

	table := fmt.Sprintf("shedlock_chaos_%d", time.Now().Unix())
	journal := table + "_journal"
	cleanup, err := store.Prepare(ctx, ls.dsn, table)
	if err != nil {
		return err
	}
	defer func() {
		// On a server of the user's, leave nothing behind.
		if err := cleanup(); err != nil {
			log.Error("clean up the lock store", "error", err)
		}
	}()
	if err := chaos.CreateJournal(ctx, db, journal); err != nil {
		return err
	}
	defer func() { _, _ = db.ExecContext(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+journal) }()

	params := chaos.Params{
		LockAtMostFor:  5 * time.Second,
		LockAtLeastFor: 200 * time.Millisecond,
		Delay:          300 * time.Millisecond,
		WorkMin:        100 * time.Millisecond,
		WorkMax:        800 * time.Millisecond,
	}
	slack := 2*time.Second + store.Slack()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := chaos.SupervisorConfig{
		Spec: chaos.PodSpec{Params: params, DSN: *dsn, Journal: journal,
			Store: store, StoreDSN: ls.dsn, Table: table},
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
	if restartStore != nil {
		cfg.DBRestartAt, cfg.RestartDB = *duration/2, restartStore
	}
	if *netFaults && store.Networked() {
		proxies, err := startProxies(store, ls.dsn, *pods)
		if err != nil {
			return err
		}
		defer proxies.close()
		cfg.LockDSN, cfg.NetFault = proxies.dsn, proxies.fault
	}
	log.Info("chaos run starting", "store", store, "where", ls.where, "pods", *pods, "duration", *duration, "table", table)
	events, end, err := chaos.Supervise(ctx, cfg)
	if err != nil {
		return err
	}
	runs, err := chaos.ReadJournal(ctx, db, journal)
	if err != nil {
		return err
	}
	rep := chaos.Analyze(runs, events, params, *pods, slack, end)
	fmt.Printf("locks in %s (%s)\n", store, ls.where)
	fmt.Println(rep)
	if ls.note != "" {
		fmt.Println(ls.note)
	}
	if len(rep.Violations) > 0 || rep.HolderKills == 0 || rep.HolderStops == 0 {
		return fmt.Errorf("%d violations (holder kills %d, holder stops %d)", len(rep.Violations), rep.HolderKills, rep.HolderStops)
	}
	return nil
}

// lockStore is the store a run's pods take their locks from.
type lockStore struct {
	dsn     string                          // chaos.PodSpec.StoreDSN
	where   string                          // for the output
	restart func(ctx context.Context) error // nil: the store is not restarted
	note    string                          // printed after the figures
	close   func() error
}

// openLockStore returns the lock store of a run: dsn if given, else for
// PostgreSQL and Redis a private server on port (0: its default), for SQLite a
// file in dir, for MySQL the journal's server.
func openLockStore(ctx context.Context, store chaos.Store, dsn, journalDSN string, port int, dir string) (*lockStore, error) {
	ls := &lockStore{dsn: dsn, where: dsn, close: func() error { return nil }}
	switch store {
	case chaos.MySQL:
		if dsn != "" {
			return nil, errors.New("-store mysql takes its locks on the journal's server: give -dsn, not -store-dsn")
		}
		ls.dsn, ls.where = journalDSN, "the journal's server"
	case chaos.Postgres:
		if dsn != "" {
			ls.where += ", no restart"
			break
		}
		srv, err := privatedb.StartPostgres(ctx, dir, cmp.Or(port, 5499))
		if err != nil {
			return nil, fmt.Errorf("private PostgreSQL (use -store-dsn to run against an existing server): %w", err)
		}
		ls.dsn, ls.close = srv.DSN(), srv.Close
		ls.where = "a private cluster, " + srv.DSN() + ", restarted mid-run"
		ls.restart = func(ctx context.Context) error { return srv.Restart(ctx, 5*time.Second) }
	case chaos.Redis:
		if dsn == "" {
			srv, err := privatedb.StartRedis(ctx, dir, cmp.Or(port, 6399))
			if err != nil {
				return nil, fmt.Errorf("private redis-server (use -store-dsn to run against an existing server): %w", err)
			}
			ls.dsn, ls.close, ls.where = srv.Addr(), srv.Close, "a private redis-server, "+srv.Addr()
		}
		ls.where += ", never restarted"
		ls.note = "Redis was not restarted: it keeps its locks in memory only (no snapshot, no append-only file\n" +
			"here), so a restart drops every lock and a pod can take one that another still holds. That is\n" +
			"the failover limit the README states for Redis, not something a run can show to hold."
	case chaos.Etcd:
		if dsn != "" {
			ls.where += ", no restart"
			break
		}
		c, err := etcdcluster.Start(ctx, dir, 3)
		if err != nil {
			return nil, fmt.Errorf("private etcd cluster (use -store-dsn to run against an existing one): %w", err)
		}
		ls.dsn, ls.close = strings.Join(c.Endpoints(), ","), c.Close
		ls.where = "a private three-member cluster, " + ls.dsn + ", its leader SIGKILLed and restarted mid-run"
		ls.restart = func(ctx context.Context) error {
			leader, err := c.WaitLeader(ctx)
			if err != nil {
				return err
			}
			if err := leader.Kill(); err != nil {
				return err
			}
			if err := sleepCtx(ctx, 3*time.Second); err != nil {
				return err
			}
			return leader.Restart(ctx)
		}
	case chaos.SQLite:
		if dsn == "" {
			ls.dsn = filepath.Join(dir, "locks.db")
		}
		ls.where = "the file " + ls.dsn + ", shared by the pods; no network faults, no restart"
	}
	return ls, nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
