// Command cron runs one robfig/cron job under a shedlock lock on MySQL/MariaDB.
// Start it in several terminals: each tick, one of them runs the job.
//
//	go run ./examples/cron -dsn 'root@tcp(127.0.0.1:3306)/test'
package main

import (
	"context"
	"database/sql"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
)

func main() {
	dsn := flag.String("dsn", envOr("SHEDLOCK_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/test"), "MySQL/MariaDB DSN")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*dsn, log); err != nil {
		log.Error("cron example", "error", err)
		os.Exit(1)
	}
}

func run(dsn string, log *slog.Logger) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := shedlock.NewMySQLProvider(db, shedlock.WithLogger(log))
	if err != nil {
		return err
	}
	defer provider.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := provider.EnsureTable(ctx); err != nil {
		return err
	}

	ex := shedlock.NewExecutor(provider, shedlock.WithExecutorLogger(log))
	c := cron.New(cron.WithSeconds())
	// The lock is bound to this one job: its name, at most 10 minutes, at least 3 s
	// (longer than the pods' clocks and wake-ups differ).
	job := shedlock.JobFunc(func(ctx context.Context) error {
		log.Info("cancelling expired orders", "pod", provider.LockedBy())
		return nil
	})
	if _, err := c.AddJob("*/5 * * * * *", ex.WithLock("orderTimeoutCancelJob", 10*time.Minute, 3*time.Second)(job)); err != nil {
		return err
	}
	c.Start()
	log.Info("running; Ctrl-C stops", "pod", provider.LockedBy())
	<-ctx.Done()

	// Stop the executor first: it cancels running jobs and releases their locks.
	// Waiting for cron first would wait for jobs that nothing told to stop.
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.Stop(shutdown)
	<-c.Stop().Done() // no more ticks; the jobs have already ended
	return err
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
