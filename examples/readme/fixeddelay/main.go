// Command fixeddelay runs a task in a loop, waiting a fixed delay after each run
// (Spring's fixedDelay, which robfig/cron lacks), on one replica at a time.
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/fixeddelay
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

	"github.com/shedlock-go/shedlock"
)

func main() {
	if err := run(); err != nil {
		slog.Error("fixeddelay", "error", err)
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
	provider, err := shedlock.NewMySQLProvider(db)
	if err != nil {
		return err
	}
	defer provider.Close()
	if err := provider.EnsureTable(ctx); err != nil {
		return err
	}

	ex := shedlock.NewExecutor(provider)
	// Each pod waits 5 s after its own run (or after finding the lock taken);
	// LockAtLeastFor keeps the cluster as a whole to at most one run per 5 s.
	cfg := shedlock.LockConfig{Name: "outboxPolling", LockAtMostFor: 5 * time.Minute, LockAtLeastFor: 5 * time.Second}
	err = ex.FixedDelay(cfg, 5*time.Second, func(ctx context.Context) error {
		slog.Info("publishing outbox events")
		return nil
	})
	if err != nil {
		return err
	}
	ex.Start()
	<-ctx.Done()

	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ex.Stop(shutdown) // cancels a running task and releases its lock
}
