package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	_ "github.com/lib/pq"              // driver "postgres"
)

// The database/sql drivers the PostgreSQL tests run with.
const (
	PGX   = "pgx"      // github.com/jackc/pgx/v5/stdlib
	LibPQ = "postgres" // github.com/lib/pq
)

// LocalPostgresDSNs are the servers the machines of this project run: trust
// authentication, as root or as postgres, database test.
var LocalPostgresDSNs = []string{
	"postgres://root@127.0.0.1:5432/test?sslmode=disable",
	"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
}

var foundPostgres = sync.OnceValues(findPostgres) // one probe (and at most one container) per test binary

// PostgresDSN returns the URL of the PostgreSQL test server: SHEDLOCK_POSTGRES_DSN
// if set, else a local server, else a container where a Docker engine answers.
// When none can be had it skips t, or fails it under CI=true.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	dsn, err := foundPostgres()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no PostgreSQL for tests (CI=true, so this fails): %v", err)
		}
		t.Skipf("SKIPPING: no PostgreSQL for tests: %v", err)
	}
	return dsn
}

func findPostgres() (string, error) {
	if dsn := os.Getenv("SHEDLOCK_POSTGRES_DSN"); dsn != "" {
		if err := pingPostgres(dsn); err != nil {
			return "", fmt.Errorf("SHEDLOCK_POSTGRES_DSN does not answer: %w", err)
		}
		return dsn, nil
	}
	var errs []string
	for _, dsn := range LocalPostgresDSNs {
		err := pingPostgres(dsn)
		if err == nil {
			return dsn, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", dsn, err))
	}
	dsn, err := startPostgresContainer()
	if err != nil {
		return "", fmt.Errorf("SHEDLOCK_POSTGRES_DSN unset; %s; container: %w", strings.Join(errs, "; "), err)
	}
	return dsn, nil
}

func pingPostgres(dsn string) error {
	db, err := sql.Open(PGX, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// PostgresURL returns the test server's URL with params added to its query.
// Both drivers send a parameter they do not know to the server as a session
// setting (TimeZone=America/New_York, default_transaction_isolation=serializable);
// pgx also reads its own, such as default_query_exec_mode=simple_protocol.
func PostgresURL(t testing.TB, params map[string]string) string {
	t.Helper()
	u, err := url.Parse(PostgresDSN(t))
	if err != nil {
		t.Fatalf("parse PostgreSQL URL: %v", err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads a + as itself, not as a space
	return u.String()
}

// OpenPostgres returns a new pool on the test server with driver (PGX or
// LibPQ) and params (see PostgresURL), closed when t ends.
func OpenPostgres(t testing.TB, driver string, params map[string]string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, PostgresURL(t, params))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// NewPostgresTable creates a lock table with the DDL of migrations/postgres
// under a name no other test uses, drops it when t ends, and returns the name.
func NewPostgresTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "postgres/0001_create_shedlock.up.sql")
}

// NewFencedPostgresTable is NewPostgresTable with migration 0002 applied too:
// the table has the fence column.
func NewFencedPostgresTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "postgres/0001_create_shedlock.up.sql", "postgres/0002_add_fence.up.sql")
}

// NewCatchUpPostgresTable is NewFencedPostgresTable with migration 0003
// applied too: the table has the last_success column that CatchUp jobs need.
func NewCatchUpPostgresTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "postgres/0001_create_shedlock.up.sql", "postgres/0002_add_fence.up.sql",
		"postgres/0003_add_last_success.up.sql")
}

// NewControlPostgresTable is NewCatchUpPostgresTable with migration 0004
// applied too: the table has the columns of pause and run-now.
func NewControlPostgresTable(t testing.TB, db *sql.DB) string {
	t.Helper()
	return newTable(t, db, "postgres/0001_create_shedlock.up.sql", "postgres/0002_add_fence.up.sql",
		"postgres/0003_add_last_success.up.sql", "postgres/0004_add_control.up.sql")
}
