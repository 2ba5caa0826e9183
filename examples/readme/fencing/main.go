// Command fencing is the README's example of Schedule and fencing tokens: a
// report job that runs once per fire time across the replicas, whatever their
// start times, and whose write a replica paused past its lock cannot make over
// a newer run's.
//
//	DATABASE_URL='postgres://root@127.0.0.1:5432/test' go run ./readme/fencing
package main

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/robfig/cron/v3"

	"github.com/shedlock-go/shedlock"
)

func main() {
	if err := run(); err != nil {
		slog.Error("fencing", "error", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := sql.Open("pgx", os.Getenv("DATABASE_URL"))
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := shedlock.NewPostgresProvider(db)
	if err != nil {
		return err
	}
	// A new table gets the fence column; an existing one, migration 0002.
	if err := provider.EnsureTable(ctx); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS report "+
		"(id INT PRIMARY KEY, total BIGINT NOT NULL, last_fence BIGINT)"); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO report VALUES (1, 0, NULL) ON CONFLICT DO NOTHING"); err != nil {
		return err
	}

	ex := shedlock.NewExecutor(provider)
	c := cron.New()
	// Once per fire time across the pods, whatever their start times: each run
	// holds the lock, in database time, until just before the next fire time.
	cfg := shedlock.LockConfig{Name: "report", LockAtMostFor: 10 * time.Minute}
	_, err = ex.Schedule(c, "@every 1m", cfg, func(ctx context.Context) error {
		return saveReport(ctx, db, time.Now().Unix())
	})
	if err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.Stop(shutdown)
	<-c.Stop().Done()
	return err
}

// errStale reports a write refused because a newer holder of the lock wrote
// first: this run lost its lock (it was paused past it, say).
var errStale = errors.New("report: a newer run has written; this one lost its lock")

// saveReport writes the report unless a newer holder of the lock has: the row
// keeps the fencing token of its last write, and a smaller one changes nothing.
// "<=" lets one run write several times.
func saveReport(ctx context.Context, db *sql.DB, total int64) error {
	fence, ok := shedlock.FenceFromContext(ctx)
	if !ok {
		return errors.New("report: the lock carries no fencing token (run migration 0002)")
	}
	res, err := db.ExecContext(ctx, `UPDATE report SET total = $1, last_fence = $2
		WHERE id = 1 AND (last_fence IS NULL OR last_fence <= $2)`, total, fence)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return errors.Join(errStale, err)
	}
	return nil
}
