package privatedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// PgBouncer pool modes.
const (
	PoolSession     = "session"     // a client keeps one server connection until it disconnects
	PoolTransaction = "transaction" // each transaction may run on a different server connection
)

// PgBouncerConfig is how a private pgbouncer pools.
type PgBouncerConfig struct {
	Upstream string // postgres:// URL of the server and database it fronts
	Mode     string // PoolSession or PoolTransaction
	// PoolSize is default_pool_size: the server connections per database and
	// user. Small (2-3), it makes transactions of many clients move between the
	// same few server connections.
	PoolSize int
}

// PgBouncer is a private pgbouncer (Debian's is 1.18: no prepared statements in
// transaction mode) on a free port of 127.0.0.1, in front of one PostgreSQL
// database, with trust authentication for the upstream URL's user. It runs as
// the postgres user when the tests run as root: pgbouncer refuses root.
type PgBouncer struct {
	dir    string // config, log, pid; deleted by Close
	logs   string
	port   int
	dbname string
	user   string
	cmd    *exec.Cmd
	done   chan error
}

// StartPgBouncer writes a configuration for cfg, starts pgbouncer and returns
// once a query through it answers. logs, if not empty, is where Close leaves
// its log. It needs Debian's pgbouncer package.
func StartPgBouncer(ctx context.Context, logs string, cfg PgBouncerConfig) (*PgBouncer, error) {
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if bin, err = lookPath("pgbouncer"); err != nil {
			return nil, errors.New("privatedb: pgbouncer not found: install Debian's pgbouncer package (apt-get install pgbouncer)")
		}
	}
	if cfg.Mode != PoolSession && cfg.Mode != PoolTransaction {
		return nil, fmt.Errorf("privatedb: pgbouncer pool mode %q: want %q or %q", cfg.Mode, PoolSession, PoolTransaction)
	}
	if cfg.PoolSize < 1 {
		cfg.PoolSize = 2
	}
	up, err := url.Parse(cfg.Upstream)
	if err != nil {
		return nil, fmt.Errorf("privatedb: pgbouncer upstream: %w", err)
	}
	as, err := lookupSysUser("postgres", "postgresql")
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	b := &PgBouncer{logs: logs, port: ports[0], dbname: strings.TrimPrefix(up.Path, "/"), user: up.User.Username(),
		done: make(chan error, 1)}
	if b.dir, err = as.mkdirOwned("privatedb-pgbouncer-"); err != nil {
		return nil, err
	}
	if err := b.writeConfig(up, cfg); err != nil {
		return nil, errors.Join(err, os.RemoveAll(b.dir))
	}
	if err := as.chownAll(b.dir); err != nil {
		return nil, errors.Join(err, os.RemoveAll(b.dir))
	}
	b.cmd = as.command(bin, filepath.Join(b.dir, "pgbouncer.ini"))
	out, err := os.OpenFile(filepath.Join(b.dir, "pgbouncer.out"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("privatedb: %w", err), os.RemoveAll(b.dir))
	}
	b.cmd.Stdout, b.cmd.Stderr = out, out
	if err := b.cmd.Start(); err != nil {
		out.Close()
		return nil, errors.Join(fmt.Errorf("privatedb: start pgbouncer: %w", err), os.RemoveAll(b.dir))
	}
	go func() { b.done <- b.cmd.Wait(); out.Close() }()
	if err := b.waitReady(ctx); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

func (b *PgBouncer) writeConfig(up *url.URL, cfg PgBouncerConfig) error {
	host, port := up.Hostname(), up.Port()
	if port == "" {
		port = "5432"
	}
	conn := fmt.Sprintf("host=%s port=%s dbname=%s user=%s", host, port, b.dbname, b.user)
	if pw, ok := up.User.Password(); ok {
		conn += " password=" + pw
	}
	ini := strings.Join([]string{
		"[databases]",
		b.dbname + " = " + conn,
		"[pgbouncer]",
		"listen_addr = 127.0.0.1",
		"listen_port = " + strconv.Itoa(b.port),
		"unix_socket_dir =",
		"auth_type = trust",
		"auth_file = " + filepath.Join(b.dir, "userlist.txt"),
		"pool_mode = " + cfg.Mode,
		"default_pool_size = " + strconv.Itoa(cfg.PoolSize),
		"max_client_conn = 500",
		// A client waiting for a server connection gives up rather than hang a test.
		"query_wait_timeout = 30",
		"logfile = " + filepath.Join(b.dir, "pgbouncer.log"),
		"pidfile = " + filepath.Join(b.dir, "pgbouncer.pid"),
		// lib/pq sends extra_float_digits, which 1.18 does not know.
		"ignore_startup_parameters = extra_float_digits",
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(b.dir, "pgbouncer.ini"), []byte(ini), 0o644); err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	users := strconv.Quote(b.user) + ` ""` + "\n"
	if err := os.WriteFile(filepath.Join(b.dir, "userlist.txt"), []byte(users), 0o644); err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	return nil
}

func (b *PgBouncer) waitReady(ctx context.Context) error {
	// The simple protocol: nothing prepared is left on the server connection.
	db, err := sql.Open("pgx", b.URL(map[string]string{"default_query_exec_mode": "simple_protocol"}))
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var one int
		qctx, qcancel := context.WithTimeout(ctx, 3*time.Second)
		err := db.QueryRowContext(qctx, "SELECT 1").Scan(&one)
		qcancel()
		if err == nil {
			return nil
		}
		select {
		case exitErr := <-b.done:
			b.done <- exitErr
			log, _ := os.ReadFile(filepath.Join(b.dir, "pgbouncer.out"))
			return fmt.Errorf("privatedb: pgbouncer exited before it answered: %v\n%s", exitErr, log)
		case <-ctx.Done():
			return fmt.Errorf("privatedb: pgbouncer on port %d does not answer: %w", b.port, errors.Join(err, ctx.Err()))
		case <-time.After(50 * time.Millisecond): // poll interval
		}
	}
}

// URL returns a postgres:// URL of the database through pgbouncer, with params
// in its query (sslmode=disable is always there: pgbouncer has no TLS here).
func (b *PgBouncer) URL(params map[string]string) string {
	q := url.Values{"sslmode": {"disable"}}
	for k, v := range params {
		q.Set(k, v)
	}
	u := url.URL{Scheme: "postgres", User: url.User(b.user), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)),
		Path: "/" + b.dbname, RawQuery: q.Encode()}
	return u.String()
}

// Close stops pgbouncer (SIGINT: it closes its connections at once), leaves its
// log in the directory given to StartPgBouncer and deletes its directory.
func (b *PgBouncer) Close() error {
	var errs []error
	if b.cmd != nil && b.cmd.Process != nil {
		if err := b.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("privatedb: signal pgbouncer: %w", err))
		}
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-b.done
			errs = append(errs, errors.New("privatedb: pgbouncer did not stop within 10s; killed"))
		}
		b.cmd = nil
	}
	if b.logs != "" {
		if log, err := os.ReadFile(filepath.Join(b.dir, "pgbouncer.log")); err == nil {
			errs = append(errs, os.WriteFile(filepath.Join(b.logs, "pgbouncer.log"), log, 0o644))
		}
	}
	return errors.Join(append(errs, os.RemoveAll(b.dir))...)
}
