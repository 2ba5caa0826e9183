// Command shedlock-bench measures what the lock costs under contention and at
// scale, against a MySQL/MariaDB server and the SQLite provider: 1 to 64 providers ("pods", each with a
// pool of its own) competing for one name and for 1,000 names, and a cold start on
// 10,000 new names. It prints Markdown tables and writes a chart into docs/.
//
// Every figure comes with the floor measured in the same run (two bare
// single-row UPDATEs through one pool), so that results from a shared or noisy
// machine can still be compared as ratios.
//
//	go run ./cmd/shedlock-bench                 # default: a couple of minutes
//	go run ./cmd/shedlock-bench -step 10s -cold 100000
//
// With the first argument herd, it measures the top of the minute instead: P
// OS processes × J jobs firing at one tick on MariaDB, PostgreSQL and Redis,
// through the library and through the floor (see herd.go):
//
//	go run ./cmd/shedlock-bench herd -scales 4x100
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

// localDSN is the server the tests use when SHEDLOCK_MYSQL_DSN is unset.
const localDSN = "root@tcp(127.0.0.1:3306)/test"

type config struct {
	dsn        string
	pods       []int
	names      []int
	step       time.Duration
	floorTime  time.Duration
	mostFor    time.Duration
	cold       int
	chart      string
	sqlitePath string
	noSQLite   bool
}

func main() {
	if spec := os.Getenv(herdPodEnv); spec != "" {
		os.Exit(podMain(spec))
	}
	if len(os.Args) > 1 && os.Args[1] == "herd" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err := herdMain(ctx, os.Args[2:], os.Stdout)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "shedlock-bench herd:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "shedlock-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shedlock-bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("shedlock-bench", flag.ContinueOnError)
	dsn := os.Getenv("SHEDLOCK_MYSQL_DSN")
	if dsn == "" {
		dsn = localDSN
	}
	var c config
	var pods, names string
	fs.StringVar(&c.dsn, "dsn", dsn, "MySQL/MariaDB DSN (go-sql-driver form); default $SHEDLOCK_MYSQL_DSN or "+localDSN)
	fs.StringVar(&pods, "pods", "1,2,4,8,16,32,64", "provider counts, each provider with a pool of its own")
	fs.StringVar(&names, "names", "1,1000", "lock name counts the providers compete for")
	fs.DurationVar(&c.step, "step", 2*time.Second, "measured time per (names, pods) step")
	fs.DurationVar(&c.floorTime, "floor", 2*time.Second, "time spent measuring the floor")
	fs.DurationVar(&c.mostFor, "most", 10*time.Minute, "LockAtMostFor of every lock")
	fs.IntVar(&c.cold, "cold", 10000, "new names for the cold start (0: skip)")
	fs.StringVar(&c.chart, "chart", "docs/bench-contention.svg", "chart file, .svg or .png (empty: no chart)")
	fs.StringVar(&c.sqlitePath, "sqlite", "", "SQLite database file for the SQLite figures (default: a temporary file)")
	fs.BoolVar(&c.noSQLite, "no-sqlite", false, "skip the SQLite figures")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.pods, err = parseInts(pods); err != nil {
		return c, fmt.Errorf("-pods: %w", err)
	}
	if c.names, err = parseInts(names); err != nil {
		return c, fmt.Errorf("-names: %w", err)
	}
	if c.step <= 0 || c.floorTime <= 0 || c.mostFor <= 0 || c.cold < 0 {
		return c, fmt.Errorf("-step, -floor and -most must be > 0, -cold >= 0")
	}
	return c, nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
