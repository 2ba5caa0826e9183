// Command leader is the README's leader example: the group's cron jobs run only
// on the pod that leads, under the leadership's context.
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/leader
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
		slog.Error("leader", "error", err)
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

	leader, err := shedlock.NewLeader(provider, "billing", 15*time.Second) // retry 2 s, renew 5 s
	if err != nil {
		return err
	}
	leader.Start()
	defer leader.Stop(context.Background()) // frees the lease: the next pod leads within 2 s
	c := cron.New(cron.WithChain(leader.OnlyWhenLeading()))
	// gocron v2: gocron.NewScheduler(shedlockgocron.SchedulerOptions(leader)...)
	_, err = c.AddJob("@every 1m", shedlock.JobFunc(invoice)) // on the leader only, ctx: its term
	if err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()
	<-c.Stop().Done()
	return nil
}

// invoice runs under the leadership's context: it ends when the term does.
func invoice(ctx context.Context) error {
	slog.Info("invoicing", "fence", fenceOf(ctx))
	return nil
}

func fenceOf(ctx context.Context) int64 {
	fence, _ := shedlock.FenceFromContext(ctx)
	return fence
}
