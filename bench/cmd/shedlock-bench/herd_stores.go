package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/privatedb"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// herdStore is one store as the coordinator of a herd sees it: where the pods
// connect, how it sets a run up, and the server's count of statements.
type herdStore struct {
	kind    string // podSpec.Store
	label   string // product and version
	dsn     string
	version string
	// pool is the connections of each pod's pool at a number of pods.
	pool func(pods int) int
	// setUp makes a table (or Redis env) of the run's own with jobs rows held,
	// so that the pods' warm-up attempts fail; free frees them; both return the
	// table or env.
	setUp func(ctx context.Context, jobs int) (string, error)
	free  func(ctx context.Context) error
	// drop removes what setUp made.
	drop func(ctx context.Context) error
	// statements reads the server's count of lock statements received so far;
	// nil when the server keeps none.
	statements func(ctx context.Context) (int64, error)
	// readCost is what one read of statements adds to the count.
	readCost int64
	close    []func() error
}

func (s *herdStore) onClose(f func() error) { s.close = append(s.close, f) }

// startPrivate starts a private server of the run's own on a free port, closed
// with s.
func startPrivate[T interface{ Close() error }](ctx context.Context, s *herdStore, dir string,
	start func(ctx context.Context, dir string, port int) (T, error)) (T, error) {
	var zero T
	port, err := privatedb.FreePorts(1)
	if err != nil {
		return zero, err
	}
	srv, err := start(ctx, dir, port[0])
	if err != nil {
		return zero, err
	}
	s.onClose(srv.Close)
	return srv, nil
}

// sqlTableMaker is what setUp needs of a SQL provider.
type sqlTableMaker interface {
	EnsureTable(ctx context.Context) error
	Close() error
}

// sqlTable sets s up on a SQL table of each run's own: made by a provider on
// it (open), with both sides' rows held; ph writes the i-th placeholder.
func (s *herdStore) sqlTable(admin *sql.DB, open func(table string) (sqlTableMaker, error), ph func(int) string) {
	var table string
	s.setUp = func(ctx context.Context, jobs int) (string, error) {
		table = runName()
		p, err := open(table)
		if err != nil {
			return "", err
		}
		defer p.Close()
		if err := p.EnsureTable(ctx); err != nil {
			return "", err
		}
		if err := insertRows(ctx, admin, table, jobs, libName, heldUntil, ph); err != nil {
			return "", err
		}
		return table, insertRows(ctx, admin, table, jobs, floorName, heldUntil, ph)
	}
	s.free = func(ctx context.Context) error {
		_, err := admin.ExecContext(ctx, "UPDATE "+table+" SET lock_until = '"+freeSince+"'")
		return err
	}
	s.drop = func(ctx context.Context) error {
		_, err := admin.ExecContext(ctx, "DROP TABLE IF EXISTS "+table)
		return err
	}
}

func (s *herdStore) Close() error {
	var errs []error
	for i := len(s.close) - 1; i >= 0; i-- {
		errs = append(errs, s.close[i]())
	}
	return errors.Join(errs...)
}

// The pools of the scenario: 8 connections on MariaDB and Redis, 5 on
// PostgreSQL, 4 each beyond 16 pods (32 pods of 5 would pass PostgreSQL's
// default 100 connections).
func poolOf(small int) func(int) int {
	return func(pods int) int {
		if pods > 16 {
			return 4
		}
		return small
	}
}

func runName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "shedlock_herd_" + hex.EncodeToString(b[:])
}

// heldUntil and freeSince are lock_until values for rows held past the run
// and rows free.
const heldUntil, freeSince = "2037-01-01 00:00:00", "2000-01-01 00:00:00"

// insertRows inserts jobs rows named by name, in batches, with lock_until.
func insertRows(ctx context.Context, db *sql.DB, table string, jobs int, name func(int) string, lockUntil string, ph func(int) string) error {
	const batch = 500
	for lo := 0; lo < jobs; lo += batch {
		var sb strings.Builder
		var args []any
		sb.WriteString("INSERT INTO " + table + " (name, lock_until, locked_at, locked_by) VALUES ")
		for j := lo; j < min(lo+batch, jobs); j++ {
			if j > lo {
				sb.WriteString(", ")
			}
			args = append(args, name(j))
			sb.WriteString("(" + ph(len(args)) + ", '" + lockUntil + "', '" + freeSince + "', 'setup')")
		}
		if _, err := db.ExecContext(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("insert rows: %w", err)
		}
	}
	return nil
}

// openMySQLHerd returns MariaDB (or MySQL) at dsn, or a private MariaDB when
// dsn is empty.
func openMySQLHerd(ctx context.Context, dsn, dir string) (*herdStore, error) {
	s := &herdStore{kind: "mysql", pool: poolOf(8), readCost: 1}
	private := dsn == ""
	if private {
		srv, err := startPrivate(ctx, s, dir, privatedb.Start)
		if err != nil {
			return nil, err
		}
		dsn = srv.DSN()
	}
	s.dsn = dsn
	admin, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.onClose(admin.Close)
	if private { // room for the largest herd
		if _, err := admin.ExecContext(ctx, "SET GLOBAL max_connections = 400"); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	if err := admin.QueryRowContext(ctx, "SELECT VERSION()").Scan(&s.version); err != nil {
		return nil, errors.Join(fmt.Errorf("connect %s: %w", dsn, err), s.Close())
	}
	s.label = "MySQL " + s.version
	if strings.Contains(strings.ToLower(s.version), "mariadb") {
		s.label = "MariaDB " + s.version
	}
	s.sqlTable(admin, func(table string) (sqlTableMaker, error) {
		return shedlock.NewMySQLProvider(admin, shedlock.WithTableName(table))
	}, func(int) string { return "?" })
	s.statements = func(ctx context.Context) (int64, error) {
		var name string
		var n int64
		err := admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &n)
		return n, err
	}
	return s, nil
}

// openPostgresHerd returns PostgreSQL at dsn, or a private cluster when dsn is
// empty, with room for 32 pods of 4 connections and pg_stat_statements, the
// count of statements.
func openPostgresHerd(ctx context.Context, dsn, dir string) (*herdStore, error) {
	s := &herdStore{kind: "postgres", pool: poolOf(5), readCost: 1}
	if dsn == "" {
		srv, err := startPrivate(ctx, s, dir, privatedb.StartPostgres)
		if err != nil {
			return nil, err
		}
		dsn = srv.DSN()
		if err := tunePostgres(ctx, srv); err != nil {
			return nil, errors.Join(err, s.Close())
		}
	}
	s.dsn = dsn
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	s.onClose(admin.Close)
	if err := admin.QueryRowContext(ctx, "SHOW server_version").Scan(&s.version); err != nil {
		return nil, errors.Join(fmt.Errorf("connect %s: %w", dsn, err), s.Close())
	}
	s.label = "PostgreSQL " + s.version
	s.sqlTable(admin, func(table string) (sqlTableMaker, error) {
		return shedlock.NewPostgresProvider(admin, shedlock.WithTableName(table))
	}, func(i int) string { return "$" + strconv.Itoa(i) })
	var ok bool
	if err := admin.QueryRowContext(ctx, "SELECT count(*) > 0 FROM pg_extension WHERE extname = 'pg_stat_statements'").Scan(&ok); err == nil && ok {
		s.statements = func(ctx context.Context) (int64, error) {
			var n int64
			err := admin.QueryRowContext(ctx, "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements").Scan(&n)
			return n, err
		}
	}
	return s, nil
}

// tunePostgres gives a private cluster room for the largest herd and the
// statement counter, and restarts it.
func tunePostgres(ctx context.Context, srv *privatedb.Postgres) error {
	db, err := sql.Open("pgx", srv.DSN())
	if err != nil {
		return err
	}
	for _, stmt := range []string{"ALTER SYSTEM SET max_connections = 400",
		"ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", stmt, err), db.Close())
		}
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := srv.Restart(ctx, 0); err != nil {
		return err
	}
	db, err = sql.Open("pgx", srv.DSN())
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	return errors.Join(err, db.Close())
}

// openRedisHerd returns Redis at addr, or a private server when addr is empty.
func openRedisHerd(ctx context.Context, addr, dir string) (*herdStore, error) {
	s := &herdStore{kind: "redis", pool: poolOf(8)}
	if addr == "" {
		srv, err := startPrivate(ctx, s, dir, privatedb.StartRedis)
		if err != nil {
			return nil, err
		}
		addr = srv.Addr()
	}
	s.dsn = addr
	c := redis.NewClient(&redis.Options{Addr: addr})
	s.onClose(c.Close)
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("connect %s: %w", addr, err), s.Close())
	}
	s.version = infoField(info, "redis_version")
	s.label = "Redis " + s.version
	var env string
	var jobs int
	key := func(name string) string { return shedlockredis.KeyPrefix + ":" + env + ":" + name }
	s.setUp = func(ctx context.Context, n int) (string, error) {
		env, jobs = runName(), n
		pipe := c.Pipeline()
		for j := range jobs {
			pipe.Set(ctx, key(libName(j)), "setup", time.Hour)
			pipe.Set(ctx, key(floorName(j)), "setup", time.Hour)
		}
		// The scripts, known to the server as they are in steady state:
		// otherwise the first EVALSHAs fail over to EVAL.
		pipe.ScriptLoad(ctx, shedlockredis.LuaScripts().Acquire)
		pipe.ScriptLoad(ctx, shedlockredis.LuaScripts().Release)
		_, err := pipe.Exec(ctx)
		return env, err
	}
	s.free = func(ctx context.Context) error {
		pipe := c.Pipeline()
		for j := range jobs {
			lib, fl := key(libName(j)), key(floorName(j))
			pipe.Del(ctx, lib, fl, shedlockredis.FenceKey(lib), shedlockredis.FenceKey(fl))
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	s.drop = s.free
	s.statements = func(ctx context.Context) (int64, error) {
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			return 0, err
		}
		var n int64
		// Every lock statement is a script (the acquire's SET runs inside
		// one): scripts are the round trips; the commands they call count too
		// in commandstats, so they are left out.
		for _, cmd := range []string{"evalsha", "eval"} {
			n += commandCalls(info, cmd)
		}
		return n, nil
	}
	return s, nil
}

// infoField returns field's value in an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// commandCalls returns the calls of cmd in INFO commandstats:
// cmdstat_set:calls=12,usec=...
func commandCalls(info, cmd string) int64 {
	v := infoField(info, "cmdstat_"+cmd)
	calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
	n, _ := strconv.ParseInt(calls, 10, 64)
	return n
}

// tempDir is a directory for the private servers' files and logs.
func tempDir() (string, func() error, error) {
	dir, err := os.MkdirTemp("", "shedlock-herd-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() error { return os.RemoveAll(dir) }, nil
}
