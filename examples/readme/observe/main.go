// Command observe runs a long outbox poll with keep-alive, asserts its lock, and
// serves the locks' metrics for Prometheus at the URL it logs (-metrics picks
// the address; by default any free port of 127.0.0.1). Run from the repository
// root:
//
//	MYSQL_DSN='root@tcp(127.0.0.1:3306)/test' go run ./examples/readme/observe -metrics 127.0.0.1:9101
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockprom"
)

func main() {
	addr := flag.String("metrics", "127.0.0.1:0", "serve the metrics at http://ADDR/metrics (port 0: any free port)")
	flag.Parse()
	if err := run(*addr); err != nil {
		slog.Error("observe", "error", err)
		os.Exit(1)
	}
}

func run(addr string) error {
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

	metrics := shedlockprom.New()
	prometheus.MustRegister(metrics)
	ex := shedlock.NewExecutor(provider, shedlock.WithKeepAlive(), shedlock.WithListener(metrics))

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("metrics", "error", err)
		}
	}()
	defer srv.Close()
	slog.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")

	// A lock of 30 s, kept while the poll runs, however long the broker makes it.
	cfg := shedlock.LockConfig{Name: "outboxPolling", LockAtMostFor: 30 * time.Second}
	err = ex.FixedDelay(cfg, 5*time.Second, pollOutbox)
	if err != nil {
		return err
	}
	report := shedlock.LockConfig{Name: "monthlyReport", LockAtMostFor: 10 * time.Minute}
	if err := ex.FixedDelay(report, 24*time.Hour, monthlyReport); err != nil {
		return err
	}
	ex.Start()
	<-ctx.Done()

	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ex.Stop(shutdown)
}

func pollOutbox(ctx context.Context) error {
	if err := shedlock.AssertLocked(ctx); err != nil {
		return err // called without the lock: refuse to publish
	}
	for batch := 0; batch < 3; batch++ {
		select {
		case <-time.After(time.Second): // publish a batch
		case <-ctx.Done():
			return context.Cause(ctx) // ErrStopped, or ErrLockLost if the lock was taken away
		}
	}
	return nil
}

// monthlyReport extends its own lock by hand before a long step.
func monthlyReport(ctx context.Context) error {
	lock, _ := shedlock.LockFromContext(ctx)
	if err := lock.Extend(ctx, time.Hour, 0); err != nil {
		return err // ErrLockLost: ctx has ended too
	}
	return nil // the long step, under ctx's new deadline
}
