package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
)

// openSQL opens c's table and connects to its database, so that an
// unreachable server is reported as such, not as a failed first statement.
func openSQL(ctx context.Context, c config, create bool) (*store, error) {
	opts := []shedlock.ProviderOption{
		shedlock.WithTableName(c.table),
		shedlock.WithLockedBy("shedlock-cli"),
		// The providers' warnings (a SQLite pool not set up for several
		// processes) are for services, not for this command.
		shedlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}
	var db *sql.DB
	var admin shedlock.Admin
	var err error
	switch c.store {
	case storeMySQL:
		if _, err := mysql.ParseDSN(c.dsn); err != nil {
			return nil, usageError{fmt.Sprintf("-dsn: not a MySQL DSN (user:password@tcp(host:3306)/database): %v", err)}
		}
		if db, err = sql.Open("mysql", c.dsn); err != nil {
			return nil, usageError{fmt.Sprintf("-dsn: %v", err)}
		}
		admin, err = shedlock.NewMySQLProvider(db, opts...)
	case storeSQLite:
		if !create && !strings.HasPrefix(c.dsn, "file:") {
			if _, err := os.Stat(c.dsn); err != nil {
				return nil, fmt.Errorf("-dsn: %w (migrate creates the file)", err)
			}
		}
		if db, err = sql.Open("sqlite", sqliteDSN(c.dsn, create)); err != nil {
			return nil, usageError{fmt.Sprintf("-dsn: %v", err)}
		}
		admin, err = shedlock.NewSQLiteProvider(db, opts...)
	case storePostgres:
		if _, err := pgx.ParseConfig(c.dsn); err != nil {
			return nil, usageError{fmt.Sprintf("-dsn: not a PostgreSQL DSN (postgres://user@host:5432/database): %s", oneLine(err))}
		}
		if db, err = sql.Open("pgx", c.dsn); err != nil {
			return nil, usageError{fmt.Sprintf("-dsn: %v", err)}
		}
		admin, err = shedlock.NewPostgresProvider(db, opts...)
	default:
		return nil, usageError{fmt.Sprintf("-store %q: want mysql, postgres, sqlite or redis", c.store)}
	}
	if err != nil {
		_ = db.Close()
		if errors.Is(err, shedlock.ErrInvalidOption) || errors.Is(err, shedlock.ErrInvalidConfig) {
			return nil, usageError{err.Error()}
		}
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("connect to %s: %w", c.store, err)
	}
	return &store{Admin: admin, where: "table " + c.table, close: db.Close}, nil
}

// sqliteDSN turns a file path into a URI that opens it read-write without
// creating it (unless create), with a busy timeout so that a command waits for
// a service's write instead of failing. A DSN that is already a URI is the
// user's: only the busy timeout is added, if it has none.
func sqliteDSN(dsn string, create bool) string {
	if !strings.HasPrefix(dsn, "file:") {
		mode := "rw"
		if create {
			mode = "rwc"
		}
		path := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(dsn)
		dsn = "file:" + path + "?mode=" + mode
	}
	if !strings.Contains(dsn, "busy_timeout") {
		sep := "&"
		if !strings.Contains(dsn, "?") {
			sep = "?"
		}
		dsn += sep + "_pragma=busy_timeout(5000)"
	}
	return dsn
}
