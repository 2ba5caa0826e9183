// Command demo runs the article's scale-out twice: three pods of the
// orders example, as separate processes on one database, first with shedlock and
// then with -no-lock, and prints what the database says happened each time.
//
// With no database configured it uses a SQLite file in a temporary directory;
// with SHEDLOCK_MYSQL_DSN set, a fresh database on that MySQL/MariaDB server.
// -driver postgres uses a fresh database on SHEDLOCK_POSTGRES_DSN's server (by
// default the local one). The locks are in the data's database unless
// -lock-store names another: sqlite, mysql, postgres (each a fresh file or
// database of its own) or redis (-redis-addr, keys under an env of the run's own).
//
// Run from the repository root:
//
//	make demo                      # or: go run ./examples/demo
//	go run ./examples/demo -duration 10s
//	go run ./examples/demo -driver postgres -lock-store redis
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
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

// The servers a fresh MySQL or PostgreSQL database is made on, unless set in
// the environment.
const (
	localMySQL    = "root@tcp(127.0.0.1:3306)/test"
	localPostgres = "postgres://root@127.0.0.1:5432/test?sslmode=disable"
)

type settings struct {
	duration  time.Duration
	pods      int
	driver    string // the data's database
	lockStore string // "": the data's
	redisAddr string
}

func main() {
	var s settings
	defaultDriver := shop.SQLite
	if os.Getenv("SHEDLOCK_MYSQL_DSN") != "" {
		defaultDriver = shop.MySQL
	}
	flag.DurationVar(&s.duration, "duration", 20*time.Second, "how long each scenario runs")
	flag.IntVar(&s.pods, "pods", 3, "pods per scenario")
	flag.StringVar(&s.driver, "driver", defaultDriver, fmt.Sprintf(`the data's database: one of %v (default "mysql" when SHEDLOCK_MYSQL_DSN is set)`, shop.Drivers))
	flag.StringVar(&s.lockStore, "lock-store", "", fmt.Sprintf("where the locks are: one of %v (default: the data's database)", shop.LockStores))
	flag.StringVar(&s.redisAddr, "redis-addr", cmp.Or(os.Getenv("SHEDLOCK_REDIS_ADDR"), "127.0.0.1:6379"),
		"Redis host:port, for -lock-store redis (default SHEDLOCK_REDIS_ADDR, else 127.0.0.1:6379)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings) (err error) {
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
		label := map[bool]string{false: "lock", true: "nolock"}[noLock]
		dsn, where, cleanup, err := database(ctx, s.driver, dir, label)
		if err != nil {
			return err
		}
		locks, lockWhere, err := lockStore(ctx, s, dir, label, noLock, &cleanup)
		if err != nil {
			return errors.Join(err, cleanup())
		}
		mode := "WITH shedlock"
		if noLock {
			mode = "WITHOUT the lock (-no-lock)"
		}
		fmt.Printf("\n== %d pods %s, %v, on %s%s\n", s.pods, mode, s.duration, where, lockWhere)
		c := scenario.Demo(bin, s.driver, dsn, "")
		c.Locks = locks
		fast := func(d time.Duration) time.Duration {
			return time.Duration(float64(d) / c.Speedup).Round(time.Millisecond)
		}
		fmt.Printf("   the article's schedule %g times faster: orderTimeoutCancelJob every %v (lock at most %v, at least %v),\n"+
			"   outboxPollingJob every %v (at most %v, at least %v); orders unpaid for %v are cancelled\n",
			c.Speedup, fast(shop.CancelEvery), fast(shop.CancelLockAtMostFor), fast(shop.CancelLockAtLeastFor),
			fast(shop.OutboxEvery), fast(shop.OutboxLockAtMostFor), fast(shop.OutboxLockAtLeastFor), c.OrderTimeout)
		logDir := filepath.Join(dir, label)
		if err := os.Mkdir(logDir, 0o755); err != nil {
			return errors.Join(err, cleanup())
		}
		c.LogDir = logDir
		c.Pods, c.Duration, c.NoLock, c.Progress = s.pods, s.duration, noLock, os.Stdout
		sum, runErr := scenario.Run(ctx, c)
		if err := errors.Join(runErr, cleanup()); err != nil {
			return err
		}
		fmt.Println()
		if err := sum.Print(os.Stdout); err != nil {
			return err
		}
	}
	fmt.Println("\nWith the lock no two runs of a job overlap and nothing is done twice; without it, every pod runs every job.")
	return nil
}

// database returns a fresh database of driver for one scenario: a SQLite file in
// dir, or a database made on the MySQL or PostgreSQL server, dropped by cleanup.
func database(ctx context.Context, driver, dir, label string) (dsn, where string, cleanup func() error, err error) {
	switch driver {
	case shop.SQLite:
		file := filepath.Join(dir, label+".db")
		return file, "SQLite file " + file, func() error { return nil }, nil
	case shop.MySQL:
		dsn, drop, err := scenario.FreshMySQL(ctx, cmp.Or(os.Getenv("SHEDLOCK_MYSQL_DSN"), localMySQL), "shedlock_demo_")
		return dsn, "MySQL/MariaDB (a fresh database, dropped afterwards)", drop, err
	case shop.Postgres:
		dsn, drop, err := scenario.FreshPostgres(ctx, cmp.Or(os.Getenv("SHEDLOCK_POSTGRES_DSN"), localPostgres), "shedlock_demo_")
		return dsn, "PostgreSQL (a fresh database, dropped afterwards)", drop, err
	}
	return "", "", nil, fmt.Errorf("unknown -driver %q (want one of %v)", driver, shop.Drivers)
}

// lockStore returns where one scenario's pods take their locks, and says so; a
// fresh database of its own joins cleanup. Without the lock there is none.
func lockStore(ctx context.Context, s settings, dir, label string, noLock bool, cleanup *func() error) (shop.LockStore, string, error) {
	if noLock || s.lockStore == "" || s.lockStore == s.driver {
		return shop.LockStore{}, "", nil
	}
	if s.lockStore == shop.Redis {
		var b [4]byte
		_, _ = rand.Read(b[:])
		env := "demo-" + hex.EncodeToString(b[:])
		return shop.LockStore{Kind: shop.Redis, RedisAddr: s.redisAddr, RedisEnv: env},
			fmt.Sprintf(", locks in Redis at %s (keys job-lock:%s:<name>)", s.redisAddr, env), nil
	}
	dsn, where, drop, err := database(ctx, s.lockStore, dir, label+"-locks")
	if err != nil {
		return shop.LockStore{}, "", err
	}
	data := *cleanup
	*cleanup = func() error { return errors.Join(drop(), data()) }
	return shop.LockStore{Kind: s.lockStore, DSN: dsn}, ", locks in " + where, nil
}
