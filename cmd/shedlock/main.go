// Command shedlock shows and clears the locks of a shedlock table or of
// shedlockredis's or shedlocketcd's keys, for operators: list them, watch them, free one whose
// holder is dead, create the table; pause, resume or run a job on every
// instance; serve the dashboard (shedlockhttp).
//
//	go install github.com/shedlock-go/shedlock/cmd/shedlock@latest
//
//	shedlock -dsn 'app@tcp(db:3306)/app' list
//	shedlock -dsn postgres://app@db:5432/app watch
//	shedlock -dsn /var/lib/app/app.db unlock outboxPollJob
//	shedlock -dsn redis://cache:6379/0 -env prod list
//	shedlock -dsn etcd://etcd-0:2379,etcd-1:2379 -env prod list
//	shedlock -dsn 'app@tcp(db:3306)/app' pause nightlyReport -for 2h
//	SHEDLOCK_TOKEN=... shedlock -dsn 'app@tcp(db:3306)/app' serve -addr 127.0.0.1:8080
//
// The store is told from the DSN (or given with -store: mysql, postgres or pg,
// sqlite, redis, etcd); the DSN, the table and the Redis or etcd env come from flags or from
// SHEDLOCK_DSN, SHEDLOCK_TABLE and SHEDLOCK_ENV. Names and holders that hold
// control characters are printed quoted, so that nothing written into the
// store can rewrite the terminal. Run shedlock -h for the rest. Exit status: 0
// done, 1 failed (the store, the table or the lock), 2 bad usage (including a
// malformed DSN).
package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

func main() {
	// The MySQL driver logs some connection errors itself; the command reports
	// each error once, in one line.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	redis.SetLogger(discard{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// discard is a go-redis logger that drops what the client would log itself.
type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}
