package privatedb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
)

// Postgres is a private PostgreSQL cluster: initdb's data directory, its own port
// and socket directory, trust authentication for the superuser root, and a
// database test. Its data survives Restart.
//
// PostgreSQL refuses to run as root: as root, the cluster's directory belongs to
// the system's postgres user and every server command runs as that user.
type Postgres struct {
	dir  string // owns data/, the socket and the log
	logs string // where Close leaves the log
	port int
	bin  string // the directory of initdb and pg_ctl
	as   []string
}

// StartPostgres creates a cluster and starts it on 127.0.0.1:port, returning once
// it answers; Close leaves the server's log in dir. It needs initdb and pg_ctl on
// PATH or in /usr/lib/postgresql/<version>/bin.
func StartPostgres(ctx context.Context, dir string, port int) (*Postgres, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	// A directory of its own under the system's temporary directory, which the
	// postgres user can reach whatever the modes of dir's parents.
	own, err := os.MkdirTemp("", "privatedb-postgres-")
	if err != nil {
		return nil, fmt.Errorf("privatedb: %w", err)
	}
	p := &Postgres{dir: own, logs: dir, port: port, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, errors.Join(fmt.Errorf("privatedb: PostgreSQL does not run as root, and there is no postgres user: %w", err),
				os.RemoveAll(own))
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(own, uid, gid); err != nil {
			return nil, errors.Join(fmt.Errorf("privatedb: %w", err), os.RemoveAll(own))
		}
		p.as = []string{"runuser", "-u", "postgres", "--"}
	}
	if err := p.run(ctx, "initdb", "-D", p.data(), "-A", "trust", "-U", "root", "--no-sync"); err != nil {
		return nil, errors.Join(err, os.RemoveAll(own))
	}
	if err := p.start(ctx); err != nil {
		return nil, errors.Join(err, p.keepLog(), os.RemoveAll(own))
	}
	db, err := sql.Open("pgx", p.url("postgres"))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("privatedb: %w", err), p.Stop())
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE test"); err != nil {
		return nil, errors.Join(fmt.Errorf("privatedb: create database: %w", err), p.Stop())
	}
	return p, nil
}

// DSN returns the URL of database test on the cluster.
func (p *Postgres) DSN() string { return p.url("test") }

func (p *Postgres) url(db string) string {
	return fmt.Sprintf("postgres://root@127.0.0.1:%d/%s?sslmode=disable", p.port, db)
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// run runs one of the cluster's commands, as the postgres user when root.
func (p *Postgres) run(ctx context.Context, name string, args ...string) error {
	argv := append(slices.Clone(p.as), filepath.Join(p.bin, name))
	argv = append(argv, args...)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("privatedb: %s: %w\n%s", name, err, out)
	}
	return nil
}

// start starts the server and waits until it accepts connections (pg_ctl -w).
// The server runs detached: Stop or Close ends it.
func (p *Postgres) start(ctx context.Context) error {
	return p.run(ctx, "pg_ctl", "start", "-w", "-t", "60", "-D", p.data(), "-l", filepath.Join(p.dir, "postgres.log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", p.port, p.dir))
}

// Stop shuts the server down (fast: sessions are ended, the data is checkpointed)
// and waits for it.
func (p *Postgres) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	return p.run(ctx, "pg_ctl", "stop", "-w", "-t", "60", "-m", "fast", "-D", p.data())
}

// Restart stops the server and starts it again on the same data, returning once
// it answers. down is how long it stays down between the two.
func (p *Postgres) Restart(ctx context.Context, down time.Duration) error {
	if err := p.Stop(); err != nil {
		return err
	}
	t := time.NewTimer(down)
	select {
	case <-ctx.Done():
		t.Stop()
	case <-t.C:
	}
	return p.start(context.WithoutCancel(ctx))
}

// Close stops the server, moves its log to the directory given to StartPostgres
// and deletes the rest.
func (p *Postgres) Close() error {
	return errors.Join(p.Stop(), p.keepLog(), os.RemoveAll(p.dir))
}

func (p *Postgres) keepLog() error {
	b, err := os.ReadFile(filepath.Join(p.dir, "postgres.log"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("privatedb: %w", err)
	}
	return os.WriteFile(filepath.Join(p.logs, "postgres.log"), b, 0o644)
}

// postgresBin returns the directory of initdb and pg_ctl: PATH's, else the
// newest of /usr/lib/postgresql/*/bin.
func postgresBin() (string, error) {
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			if real, err := filepath.EvalSymlinks(initdb); err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(initdb), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(a) - versionOf(b) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if fileExists(filepath.Join(dirs[i], "initdb")) && fileExists(filepath.Join(dirs[i], "pg_ctl")) {
			return dirs[i], nil
		}
	}
	return "", errors.New("privatedb: initdb and pg_ctl not found on PATH or in /usr/lib/postgresql/*/bin")
}

// versionOf reads the major version from /usr/lib/postgresql/<version>/bin.
func versionOf(bin string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(bin)))
	return v
}
