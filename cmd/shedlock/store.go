package main

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
)

// store is an open lock table.
type store struct {
	shedlock.Admin
	db *sql.DB
}

func (s *store) Close() error { return s.db.Close() }

// openStore opens c's table. create allows a SQLite file to be created, for
// migrate; other commands refuse a file that is not there.
func openStore(c config, create bool) (*store, error) {
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
	switch strings.ToLower(c.store) {
	case "mysql", "mariadb":
		if _, err := mysql.ParseDSN(c.dsn); err != nil {
			return nil, fmt.Errorf("-dsn: %w", err)
		}
		if db, err = sql.Open("mysql", c.dsn); err != nil {
			return nil, err
		}
		admin, err = shedlock.NewMySQLProvider(db, opts...)
	case "sqlite", "sqlite3":
		if !create && !strings.HasPrefix(c.dsn, "file:") {
			if _, err := os.Stat(c.dsn); err != nil {
				return nil, fmt.Errorf("-dsn: %w", err)
			}
		}
		if db, err = sql.Open("sqlite", sqliteDSN(c.dsn, create)); err != nil {
			return nil, err
		}
		admin, err = shedlock.NewSQLiteProvider(db, opts...)
	case "postgres", "postgresql":
		if db, err = sql.Open("pgx", c.dsn); err != nil {
			return nil, fmt.Errorf("-dsn: %w", err)
		}
		admin, err = shedlock.NewPostgresProvider(db, opts...)
	default:
		return nil, usageError{fmt.Sprintf("-store %q: want mysql, postgres or sqlite", c.store)}
	}
	if err != nil {
		_ = db.Close()
		if errors.Is(err, shedlock.ErrInvalidOption) {
			return nil, usageError{err.Error()}
		}
		return nil, err
	}
	return &store{Admin: admin, db: db}, nil
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
