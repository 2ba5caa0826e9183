// Command quickstart is the README's quick start: a robfig/cron job that runs on
// one replica at a time, under a lock row in the service's MySQL/MariaDB database.
// Start it in two terminals: each minute, one of them runs the job.
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/quickstart
package main

import (
	"context"
	"database/sql"
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
	if err := run(); err != nil {
		slog.Error("quickstart", "error", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	db, err := sql.Open("mysql", os.Getenv("MYSQL_DSN"))
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := shedlock.NewMySQLProvider(db, shedlock.WithLockedBy(os.Getenv("POD_NAME")))
	if err != nil {
		return err
	}
	// The table, made if missing (or run migrations/mysql, or `shedlock migrate`,
	// before deploying). A database that is down is no reason to stay down: each
	// run's lock attempt fails, logged, until it answers.
	if err := provider.EnsureTable(ctx); err != nil {
		slog.Warn("lock table not checked; jobs wait for the database", "error", err)
	}

	ex := shedlock.NewExecutor(provider)
	c := cron.New()
	job := shedlock.JobFunc(func(ctx context.Context) error {
		slog.Info("cancelling unpaid orders")
		return nil
	})
	// Held at most 10 minutes if this pod dies running the job; at least 30 s, so
	// that a pod whose clock is a little behind does not run this minute again.
	_, err = c.AddJob("* * * * *", ex.WithLock("cancelUnpaidOrders", 10*time.Minute, 30*time.Second)(job))
	if err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()

	// Stop the executor first: it cancels running jobs and releases their locks.
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.Stop(shutdown)
	<-c.Stop().Done()
	return err
}
