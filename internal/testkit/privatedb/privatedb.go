// Package privatedb runs database servers of its own: MariaDB and PostgreSQL
// (own port, socket and data directory), so that a test can restart a database
// without disturbing the shared server that other tests use at the same time,
// and Redis, for a run whose keys no other test can touch. For the topology
// tests it also runs a MariaDB Galera cluster on loopback ports and a pgbouncer
// in front of a PostgreSQL database.
package privatedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql" // the server is MariaDB
)

// Server is a private mariadbd. Its data survives Restart.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan error // receives the exit of cmd
}

// Start installs a fresh data directory under dir and starts mariadbd on
// 127.0.0.1:port, returning once it answers. It needs mariadb-install-db and
// mariadbd on PATH (or in /usr/sbin).
func Start(ctx context.Context, dir string, port int) (*Server, error) {
	install, err := lookPath("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	out, err := exec.CommandContext(ctx, install, "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
		"--user="+currentUser(), "--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("privatedb: mariadb-install-db: %w\n%s", err, out)
	}
	s := &Server{dir: dir, port: port}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port))
	if err != nil {
		return nil, fmt.Errorf("privatedb: %w", err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS test"); err != nil {
		return nil, errors.Join(fmt.Errorf("privatedb: create database: %w", err), s.Stop())
	}
	return s, nil
}

// DSN returns the DSN of database test on the server.
func (s *Server) DSN() string { return fmt.Sprintf("root@tcp(127.0.0.1:%d)/test", s.port) }

func (s *Server) start(ctx context.Context) error {
	bin, err := lookPath("mariadbd")
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, "mariadbd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	// Not CommandContext: the server must outlive the ctx of the call that starts it.
	s.cmd = exec.Command(bin, "--no-defaults", "--user="+currentUser(),
		"--datadir="+filepath.Join(s.dir, "data"), "--port="+strconv.Itoa(s.port), "--bind-address=127.0.0.1",
		"--socket="+filepath.Join(s.dir, "mariadbd.sock"), "--pid-file="+filepath.Join(s.dir, "mariadbd.pid"),
		"--innodb-buffer-pool-size=32M", "--skip-log-bin")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("privatedb: start mariadbd: %w", err)
	}
	s.done = make(chan error, 1)
	go func() { s.done <- s.cmd.Wait(); logf.Close() }()
	return s.waitReady(ctx)
}

func (s *Server) waitReady(ctx context.Context) error {
	db, err := sql.Open("mysql", fmt.Sprintf("root@tcp(127.0.0.1:%d)/?timeout=1s", s.port))
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := db.PingContext(pctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case exitErr := <-s.done:
			return fmt.Errorf("privatedb: mariadbd exited before it answered (see %s): %v",
				filepath.Join(s.dir, "mariadbd.log"), exitErr)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("privatedb: mariadbd on port %d does not answer: %w", s.port, errors.Join(err, ctx.Err()))
		}
		time.Sleep(200 * time.Millisecond) // poll interval
	}
}

// Stop shuts the server down (SIGTERM: a clean InnoDB shutdown) and waits for it.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("privatedb: signal mariadbd: %w", err)
	}
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("privatedb: mariadbd did not stop within 60s; killed")
	}
	s.cmd = nil
	return nil
}

// Close stops the server and deletes its data directory; its log stays in dir.
func (s *Server) Close() error {
	return errors.Join(s.Stop(), os.RemoveAll(filepath.Join(s.dir, "data")))
}

// Restart stops the server and starts it again on the same data, returning once
// it answers. down is how long it stays down between the two.
func (s *Server) Restart(ctx context.Context, down time.Duration) error {
	if err := s.Stop(); err != nil {
		return err
	}
	t := time.NewTimer(down)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-t.C:
	}
	return s.start(context.WithoutCancel(ctx))
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("privatedb: %s not found on PATH or in /usr/sbin", name)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func currentUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	if os.Geteuid() == 0 {
		return "root"
	}
	return strconv.Itoa(os.Geteuid())
}
