package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
)

// The command's tests find their servers as the project's other tests do, with
// nothing but the command's own requirements (it is a published module, so it
// cannot require the repository's internal test kit): the DSN or address in
// SHEDLOCK_MYSQL_DSN, SHEDLOCK_POSTGRES_DSN or SHEDLOCK_REDIS_ADDR, else the
// local server. A store that cannot be had skips its tests with a line
// "SKIPPING: no <store> for tests: <why>", which scripts/test counts as a
// failure unless SHEDLOCK_SKIP_STORES names the store; under CI=true they fail.
var (
	mysqlServer = sync.OnceValues(func() (string, error) {
		return findServer("mysql", "SHEDLOCK_MYSQL_DSN", []string{"root@tcp(127.0.0.1:3306)/test"}, pingSQL("mysql"))
	})
	postgresServer = sync.OnceValues(func() (string, error) {
		return findServer("postgres", "SHEDLOCK_POSTGRES_DSN", []string{
			"postgres://root@127.0.0.1:5432/test?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		}, pingSQL("pgx"))
	})
	redisServer = sync.OnceValues(func() (string, error) {
		return findServer("redis", "SHEDLOCK_REDIS_ADDR", []string{"127.0.0.1:6379"}, pingRedis)
	})
)

// findServer returns the server in the environment variable env, else the first
// local one that answers.
func findServer(store, env string, local []string, ping func(string) error) (string, error) {
	if slices.Contains(strings.Split(os.Getenv("SHEDLOCK_SKIP_STORES"), ","), store) {
		return "", fmt.Errorf("SHEDLOCK_SKIP_STORES=%s", os.Getenv("SHEDLOCK_SKIP_STORES"))
	}
	if v := os.Getenv(env); v != "" {
		if err := ping(v); err != nil {
			return "", fmt.Errorf("%s does not answer: %w", env, err)
		}
		return v, nil
	}
	var errs []string
	for _, v := range local {
		err := ping(v)
		if err == nil {
			return v, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", v, err))
	}
	return "", fmt.Errorf("%s unset; %s", env, strings.Join(errs, "; "))
}

func pingSQL(driver string) func(string) error {
	return func(dsn string) error {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	}
}

func pingRedis(addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

// server returns found's server, or skips t (fails it under CI=true).
func server(t testing.TB, what string, found func() (string, error)) string {
	t.Helper()
	v, err := found()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no %s for tests (CI=true, so this fails): %v", what, err)
		}
		t.Skipf("SKIPPING: no %s for tests: %v", what, err)
	}
	return v
}

func mysqlDSN(t testing.TB) string    { return server(t, "MySQL/MariaDB", mysqlServer) }
func postgresDSN(t testing.TB) string { return server(t, "PostgreSQL", postgresServer) }

// redisURL is the test server as the command's -dsn takes it.
func redisURL(t testing.TB) string { return "redis://" + server(t, "Redis", redisServer) + "/0" }

// openDB returns a pool on dsn, closed when t ends.
func openDB(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// uniqueName is a table name or Redis env no other test uses.
func uniqueName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// newSQLTable creates a lock table of the provider's kind under a name of its
// own, drops it when t ends, and returns its name.
func newSQLTable(t testing.TB, db *sql.DB, newProvider func(*sql.DB, ...shedlock.ProviderOption) (shedlock.Admin, error)) string {
	t.Helper()
	table := uniqueName("shedlock_t_")
	admin, err := newProvider(db, shedlock.WithTableName(table))
	require.NoError(t, err)
	require.NoError(t, admin.EnsureTable(context.Background()))
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	return table
}

func newMySQL(db *sql.DB, opts ...shedlock.ProviderOption) (shedlock.Admin, error) {
	return shedlock.NewMySQLProvider(db, opts...)
}

func newPostgres(db *sql.DB, opts ...shedlock.ProviderOption) (shedlock.Admin, error) {
	return shedlock.NewPostgresProvider(db, opts...)
}
