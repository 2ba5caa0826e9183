// Package testdb finds the MySQL/MariaDB and PostgreSQL servers that tests run
// against and gives each test a table of its own.
//
// The MySQL server is SHEDLOCK_MYSQL_DSN if set, else the local one on
// 127.0.0.1:3306 (root, no password, database test), else a MySQL 8 container
// when a Docker engine answers. PostgreSQL likewise: SHEDLOCK_POSTGRES_DSN, else
// 127.0.0.1:5432 (trust authentication, database test), else a container. When
// none can be had, tests skip with the reason; under CI=true they fail instead.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/shedlock-go/shedlock/migrations"
)

// LocalDSN is the server the machines of this project run.
const LocalDSN = "root@tcp(127.0.0.1:3306)/test"

var found = sync.OnceValues(findServer) // one probe (and at most one container) per test binary

// MySQLDSN returns the DSN of the test server, or skips t (fails it under CI=true).
func MySQLDSN(t testing.TB) string {
	t.Helper()
	dsn, err := found()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no MySQL/MariaDB for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no MySQL/MariaDB for tests: %v", err)
	}
	return dsn
}

func findServer() (string, error) {
	if dsn := os.Getenv("SHEDLOCK_MYSQL_DSN"); dsn != "" {
		if err := ping(dsn); err != nil {
			return "", fmt.Errorf("SHEDLOCK_MYSQL_DSN does not answer: %w", err)
		}
		return dsn, nil
	}
	localErr := ping(LocalDSN)
	if localErr == nil {
		return LocalDSN, nil
	}
	dsn, err := startContainer()
	if err != nil {
		return "", fmt.Errorf("SHEDLOCK_MYSQL_DSN unset; %s: %v; container: %w", LocalDSN, localErr, err)
	}
	return dsn, nil
}

func ping(dsn string) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// Open returns a new pool on the test server, closed when t ends. params are
// extra DSN parameters, such as time_zone=%27%2B09%3A00%27 (go-sql-driver sends
// unknown ones as SET on each connection).
func Open(t testing.TB, params map[string]string) *sql.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(MySQLDSN(t))
	if err != nil {
		t.Fatalf("parse DSN: %v", err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range params {
		cfg.Params[k] = v
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// NewTable creates a lock table with the DDL of migrations/mysql under a name no
// other test uses, drops it when t ends, and returns the name.
func NewTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "mysql/0001_create_shedlock.up.sql")
}

// NewFencedTable is NewTable with migration 0002 applied too: the table has the
// fence column.
func NewFencedTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "mysql/0001_create_shedlock.up.sql", "mysql/0002_add_fence.up.sql")
}

// newTable runs a store's migrations, in order, under a name no other test
// uses, and drops the table when t ends.
func newTable(t testing.TB, db *sql.DB, migrationFiles ...string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "shedlock_t_" + hex.EncodeToString(b[:])
	for _, migration := range migrationFiles {
		ddl, err := migrations.FS.ReadFile(migration)
		if err != nil {
			t.Fatal(err)
		}
		stmt := strings.Replace(string(ddl), "shedlock", name, 1)
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			t.Fatalf("create table %s: %v", name, err)
		}
	}
	t.Cleanup(func() {
		_, _ = db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+name)
	})
	return name
}

// NewCatchUpTable is NewFencedTable with migration 0003 applied too: the table
// has the last_success column that CatchUp jobs need.
func NewCatchUpTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "mysql/0001_create_shedlock.up.sql", "mysql/0002_add_fence.up.sql",
		"mysql/0003_add_last_success.up.sql")
}

// NewControlTable is NewCatchUpTable with migration 0004 applied too: the
// table has the columns of pause and run-now.
func NewControlTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "mysql/0001_create_shedlock.up.sql", "mysql/0002_add_fence.up.sql",
		"mysql/0003_add_last_success.up.sql", "mysql/0004_add_control.up.sql")
}
