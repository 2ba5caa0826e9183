// Command shedlock-demo runs the article's scale-out twice: three pods of the
// orders example, as separate processes on one database, first with shedlock and
// then with -no-lock, and prints what the database says happened each time.
//
// With no database configured it uses a SQLite file in a temporary directory;
// with SHEDLOCK_MYSQL_DSN set, a fresh database on that MySQL/MariaDB server.
//
//	make demo                      # or: go run ./cmd/shedlock-demo
//	go run ./cmd/shedlock-demo -duration 10s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/shedlock-go/shedlock/examples/orders/scenario"
	"github.com/shedlock-go/shedlock/examples/orders/shop"
)

func main() {
	duration := flag.Duration("duration", 20*time.Second, "how long each scenario runs")
	pods := flag.Int("pods", 3, "pods per scenario")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *duration, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "shedlock-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, duration time.Duration, pods int) (err error) {
	dir, err := os.MkdirTemp("", "shedlock-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fmt.Println("building the orders example ...")
	bin, err := scenario.Build(ctx, dir)
	if err != nil {
		return err
	}
	for _, noLock := range []bool{false, true} {
		driver, dsn, where, cleanup, err := database(ctx, dir, noLock)
		if err != nil {
			return err
		}
		mode := "WITH shedlock"
		if noLock {
			mode = "WITHOUT the lock (-no-lock)"
		}
		fmt.Printf("\n== %d pods %s, %v, on %s\n", pods, mode, duration, where)
		c := scenario.Demo(bin, driver, dsn, "")
		fast := func(d time.Duration) time.Duration {
			return time.Duration(float64(d) / c.Speedup).Round(time.Millisecond)
		}
		fmt.Printf("   the article's schedule %g times faster: orderTimeoutCancelJob every %v (lock at most %v, at least %v),\n"+
			"   outboxPollingJob every %v (at most %v, at least %v); orders unpaid for %v are cancelled\n",
			c.Speedup, fast(shop.CancelEvery), fast(shop.CancelLockAtMostFor), fast(shop.CancelLockAtLeastFor),
			fast(shop.OutboxEvery), fast(shop.OutboxLockAtMostFor), fast(shop.OutboxLockAtLeastFor), c.OrderTimeout)
		logDir := filepath.Join(dir, map[bool]string{false: "lock", true: "nolock"}[noLock])
		if err := os.Mkdir(logDir, 0o755); err != nil {
			return errors.Join(err, cleanup())
		}
		c.LogDir = logDir
		c.Pods, c.Duration, c.NoLock, c.Progress = pods, duration, noLock, os.Stdout
		s, runErr := scenario.Run(ctx, c)
		if err := errors.Join(runErr, cleanup()); err != nil {
			return err
		}
		fmt.Println()
		if err := s.Print(os.Stdout); err != nil {
			return err
		}
	}
	fmt.Println("\nWith the lock no two runs of a job overlap and nothing is done twice; without it, every pod runs every job.")
	return nil
}

// database returns where a scenario runs: a fresh SQLite file in dir, or a fresh
// database on SHEDLOCK_MYSQL_DSN's server.
func database(ctx context.Context, dir string, noLock bool) (driver, dsn, where string, cleanup func() error, err error) {
	if server := os.Getenv("SHEDLOCK_MYSQL_DSN"); server != "" {
		dsn, drop, err := scenario.FreshMySQL(ctx, server, "shedlock_demo_")
		if err != nil {
			return "", "", "", nil, err
		}
		return shop.MySQL, dsn, "MySQL/MariaDB (a fresh database, dropped afterwards)", drop, nil
	}
	name := map[bool]string{false: "lock.db", true: "nolock.db"}[noLock]
	file := filepath.Join(dir, name)
	return shop.SQLite, file, "SQLite file " + file, func() error { return nil }, nil
}
