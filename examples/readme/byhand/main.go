// Command byhand is the README's "one run, by hand": Executor.Run for a job
// that something other than a scheduler starts, and the provider used directly.
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/byhand
package main

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock"
)

func main() {
	if err := run(context.Background()); err != nil {
		slog.Error("byhand", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	db, err := sql.Open("mysql", os.Getenv("MYSQL_DSN"))
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := shedlock.NewMySQLProvider(db)
	if err != nil {
		return err
	}
	if err := provider.EnsureTable(ctx); err != nil {
		return err
	}
	ex := shedlock.NewExecutor(provider)
	cfg := shedlock.LockConfig{Name: "nightlyReport", LockAtMostFor: 30 * time.Minute, LockAtLeastFor: time.Minute}

	ran, err := ex.Run(ctx, cfg, func(ctx context.Context) error {
		return buildReport(ctx) // ctx ends before the lock can expire, and on ex.Stop
	})
	switch {
	case err != nil: // the store failed (the task did not run), or the task's own error
		return err
	case !ran: // another pod holds the lock: not an error
		slog.Info("report runs elsewhere")
	}

	lock, err := provider.TryLock(ctx, cfg)
	if errors.Is(err, shedlock.ErrNotAcquired) {
		return nil // held, by another pod or by the run above (LockAtLeastFor)
	}
	if err != nil {
		return err
	}
	defer lock.Unlock(context.WithoutCancel(ctx)) // keeps the lock until LockAtLeastFor has passed
	return buildReport(ctx)
}

func buildReport(context.Context) error { return nil }
