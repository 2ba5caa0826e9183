// Command shedlock shows and clears the locks of a shedlock table, for
// operators: list them, watch them, free one whose holder is dead, create the
// table.
//
//	shedlock -store mysql -dsn 'app@tcp(db:3306)/app' list
//	shedlock -store sqlite -dsn /var/lib/app/app.db unlock outboxPollJob
//
// The store, its DSN and the table come from flags or from SHEDLOCK_STORE,
// SHEDLOCK_DSN and SHEDLOCK_TABLE. Run shedlock -h for the rest. Exit status: 0
// done, 1 failed (the store, the table or the lock), 2 bad usage.
package main

import (
	"context"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

func main() {
	// The MySQL driver logs some connection errors itself; the command reports
	// each error once, in one line.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
