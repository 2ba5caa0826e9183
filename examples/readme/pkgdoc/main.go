// Command pkgdoc is the setup at the top of the package doc (doc.go): a
// robfig/cron job under a lock row in MySQL/MariaDB. Run from the repository
// root; start it twice, and each minute one of the two runs the job:
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/pkgdoc
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv("MYSQL_DSN")); err != nil {
		slog.Error("pkgdoc", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dsn string) error {
	db, err := sql.Open("mysql", dsn) // the service's own database; import its driver
	if err != nil {
		return err
	}
	defer db.Close()
	provider, err := shedlock.NewMySQLProvider(db) // or NewPostgresProvider, NewSQLiteProvider, shedlockredis
	if err != nil {
		return err
	}
	if err := provider.EnsureTable(ctx); err != nil { // or run migrations/mysql
		return err
	}
	ex := shedlock.NewExecutor(provider)
	c := cron.New()
	job := shedlock.JobFunc(cancelUnpaidOrders) // on one instance at a time
	if _, err := c.AddJob("* * * * *", ex.WithLock("cancelUnpaidOrders", 10*time.Minute, 30*time.Second)(job)); err != nil {
		return err
	}
	c.Start()
	<-ctx.Done()

	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = ex.Stop(shutdown) // cancels running jobs and releases their locks
	<-c.Stop().Done()
	return err
}

func cancelUnpaidOrders(ctx context.Context) error {
	slog.InfoContext(ctx, "cancelling unpaid orders")
	return nil
}
