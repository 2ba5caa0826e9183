// Command gocron runs one gocron v2 job under a shedlock lock on MySQL/MariaDB.
// Start it in several terminals, a few seconds apart: the pods' schedules are
// offset, yet each tick runs on one of them, because the lock is kept for
// LockAtLeastFor after the job returns.
//
//	go run ./examples/gocron -dsn 'root@tcp(127.0.0.1:3306)/test'
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

	"github.com/go-co-op/gocron/v2"
	_ "github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockgocron"
)

func main() {
	dsn := flag.String("dsn", envOr("SHEDLOCK_MYSQL_DSN", "root@tcp(127.0.0.1:3306)/test"), "MySQL/MariaDB DSN")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(*dsn, log); err != nil {
		log.Error("gocron example", "error", err)
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

	// Held at most 10 minutes (a crashed pod's lock frees itself then), at least
	// 3 s: longer than the pods' schedules differ, shorter than the interval.
	locker, err := shedlockgocron.NewLocker(provider, 10*time.Minute, 3*time.Second, shedlockgocron.WithLogger(log))
	if err != nil {
		return err
	}
	s, err := gocron.NewScheduler(gocron.WithDistributedLocker(locker))
	if err != nil {
		return err
	}
	_, err = s.NewJob(gocron.DurationJob(5*time.Second),
		gocron.NewTask(func(ctx context.Context) {
			log.Info("cancelling expired orders", "pod", provider.LockedBy())
		}),
		gocron.WithName("orderTimeoutCancelJob")) // the lock's name
	if err != nil {
		return err
	}
	s.Start()
	log.Info("running; Ctrl-C stops", "pod", provider.LockedBy())
	<-ctx.Done()
	// Shutdown cancels the running job's context and waits for it; its lock is
	// released with a context of its own.
	return s.Shutdown()
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
