// Command gocron is the README's gocron v2 example: a job that runs on one replica
// per tick, though each replica's scheduler started at its own moment.
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/gocron
package main

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-co-op/gocron/v2"
	_ "github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
)

func main() {
	if err := run(); err != nil {
		slog.Error("gocron", "error", err)
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
	defer provider.Close()
	if err := provider.EnsureTable(ctx); err != nil {
		return err
	}

	// At most 10 minutes if a pod dies holding it; at least 20 s, longer than the
	// pods' schedules differ and shorter than the job's interval.
	locker, err := shedlockgocron.NewLocker(provider, 10*time.Minute, 20*time.Second)
	if err != nil {
		return err
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	_, err = s.NewJob(gocron.DurationJob(time.Minute),
		gocron.NewTask(func(ctx context.Context) { slog.Info("cancelling unpaid orders") }),
		gocron.WithName("cancelUnpaidOrders")) // the lock's name
	if err != nil {
		return err
	}
	s.Start()
	<-ctx.Done()
	return s.Shutdown() // cancels the running job's context, waits, releases its lock
}
