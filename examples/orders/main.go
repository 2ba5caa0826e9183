// Command orders is one pod of the example order service: it runs the article's
// two scheduled jobs, orderTimeoutCancelJob and outboxPollingJob, each under a
// shedlock lock, until SIGTERM or SIGINT, then stops gracefully.
//
// Run from the repository root:
//
//	go run ./examples/orders -pod pod-1 -load 20ms          # SQLite file shedlock-orders.db in the temp dir
//	go run ./examples/orders -pod pod-1 -dsn /tmp/shop.db   # another SQLite file
//	SHEDLOCK_MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/orders -pod pod-1
//	go run ./examples/orders -driver postgres -dsn 'postgres://root@127.0.0.1:5432/test' -pod pod-1
//	go run ./examples/orders -pod pod-1 -lock-store redis    # data in SQLite, locks in Redis
//
// Start several with the same database to see the lock at work; add -no-lock to
// see what happens without it. make demo (examples/demo) does both and prints a
// summary.
//
// The outbox job runs with keep-alive: a poll slowed by the broker keeps its
// lock however long it takes. Each pod serves its lock metrics (shedlockprom)
// at the URL it logs; -metrics 127.0.0.1:9101 picks the address.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/examples/orders/shop"
	"github.com/shedlock-go/shedlock/shedlockprom"
)

type config struct {
	driver, dsn  string
	locks        shop.LockStore
	pod          string
	noLock       bool
	speedup      float64
	orderTimeout time.Duration
	latency      time.Duration
	load         time.Duration
	metrics      string
}

func main() {
	var c config
	// Outside the work tree, and the same file for every pod of this machine.
	defaultDriver, defaultDSN := shop.SQLite, filepath.Join(os.TempDir(), "shedlock-orders.db")
	if dsn := os.Getenv("SHEDLOCK_MYSQL_DSN"); dsn != "" {
		defaultDriver, defaultDSN = shop.MySQL, dsn
	}
	host, _ := os.Hostname()
	defaultRedis := cmp.Or(os.Getenv("SHEDLOCK_REDIS_ADDR"), "127.0.0.1:6379")
	flag.StringVar(&c.driver, "driver", defaultDriver, fmt.Sprintf(`the data's database: one of %v (default "mysql" when SHEDLOCK_MYSQL_DSN is set)`, shop.Drivers))
	flag.StringVar(&c.dsn, "dsn", defaultDSN, "SQLite file, MySQL DSN, or PostgreSQL URL")
	flag.StringVar(&c.locks.Kind, "lock-store", "", fmt.Sprintf("where the locks are: one of %v (default: the data's database)", shop.LockStores))
	flag.StringVar(&c.locks.DSN, "lock-dsn", "", "the lock store's database (SQLite file, MySQL DSN or PostgreSQL URL) when it is not the data's")
	flag.StringVar(&c.locks.RedisAddr, "redis-addr", defaultRedis, "Redis host:port, for -lock-store redis (default SHEDLOCK_REDIS_ADDR, else 127.0.0.1:6379)")
	flag.StringVar(&c.locks.RedisEnv, "redis-env", "", `the env in the Redis keys, job-lock:<env>:<name> (default "default")`)
	flag.StringVar(&c.pod, "pod", host, "this pod's name, written to job_runs and the topic")
	flag.BoolVar(&c.noLock, "no-lock", false, "run the jobs without the lock, as every pod does without shedlock")
	flag.Float64Var(&c.speedup, "speedup", 1, "divide the article's intervals and lock durations by this")
	flag.DurationVar(&c.orderTimeout, "order-timeout", 30*time.Minute, "cancel orders unpaid for this long")
	flag.DurationVar(&c.latency, "latency", 2*time.Millisecond, "simulated time per published event and per cancelled order")
	flag.DurationVar(&c.load, "load", 0, "also create an order every this often (0: no load)")
	flag.StringVar(&c.metrics, "metrics", "127.0.0.1:0", `serve Prometheus metrics at http://ADDR/metrics (port 0: any free port; "": none)`)
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("pod", c.pod)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, c, log); err != nil {
		log.Error("pod failed", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, log *slog.Logger) error {
	if c.speedup <= 0 {
		return errors.New("orders: -speedup must be > 0")
	}
	db, err := shop.Open(c.driver, c.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Setup(ctx); err != nil {
		return err
	}
	var provider shedlock.LockProvider = shop.NoLock{}
	if !c.noLock {
		p, closeLocks, err := db.Locks(ctx, c.locks, fmt.Sprintf("%s/%d", c.pod, os.Getpid()), log)
		if err != nil {
			return err
		}
		defer closeLocks()
		provider = p
	}
	opts := []shedlock.ExecutorOption{shedlock.WithExecutorLogger(log)}
	if c.metrics != "" {
		reg := prometheus.NewRegistry()
		m := shedlockprom.New()
		reg.MustRegister(m)
		opts = append(opts, shedlock.WithListener(m))
		metricsCtx, stopMetrics := context.WithCancel(context.Background())
		wait, err := serveMetrics(metricsCtx, c.metrics, reg, log)
		if err != nil {
			stopMetrics()
			return err
		}
		// Served until the executor has stopped, so that a last scrape sees the last runs.
		defer func() { stopMetrics(); _ = wait() }()
	}
	ex := shedlock.NewExecutor(provider, opts...)
	jobs := &shop.Jobs{DB: db, Pod: c.pod, OrderTimeout: c.orderTimeout, Latency: c.latency, Log: log}
	if err := shop.Schedule(ex, jobs, c.speedup); err != nil {
		return err
	}
	loadDone := make(chan error, 1)
	if c.load > 0 {
		go func() {
			_, err := db.Generate(ctx, c.load)
			loadDone <- err
		}()
	} else {
		loadDone <- nil
	}
	ex.Start()
	log.Info("pod started", "driver", c.driver, "lock", !c.noLock, "lock_store", cmp.Or(c.locks.Kind, c.driver), "speedup", c.speedup)
	<-ctx.Done()

	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = ex.Stop(stopCtx) // cancels running jobs, waits for them and their releases
	log.Info("pod stopped", "error", err)
	return errors.Join(err, <-loadDone)
}
