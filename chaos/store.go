package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// Store is where pods take their locks. The journal stays in MySQL/MariaDB
// whatever the store: it observes the locks and holds none.
type Store string

// The stores, and what a PodSpec's StoreDSN and Table mean for each.
const (
	MySQL    Store = "mysql"    // a go-sql-driver DSN; Table is the lock table
	Postgres Store = "postgres" // a postgres:// URL for pgx; Table is the lock table
	Redis    Store = "redis"    // host:port; Table is the env of the keys, job-lock:<env>:<name>
	SQLite   Store = "sqlite"   // a file path; Table is the lock table
	Etcd     Store = "etcd"     // endpoints, comma-separated URLs; Table is the env of the keys, shedlock:<env>:<name>
)

// Stores are every Store, in the order of the flag's help.
var Stores = []Store{MySQL, Postgres, Redis, SQLite, Etcd}

// ParseStore returns the Store named s.
func ParseStore(s string) (Store, error) {
	if slices.Contains(Stores, Store(s)) {
		return Store(s), nil
	}
	return "", fmt.Errorf("chaos: unknown store %q (want one of %v)", s, Stores)
}

// Slack is what the store itself adds to when a lock is free again, beyond
// what its holder asked: etcd's leases are whole seconds, at least its
// minimum TTL (2s at its defaults: a LockAtLeastFor of 100ms holds 2s), and
// its leader looks for ended leases every 500ms. The others keep milliseconds.
func (s Store) Slack() time.Duration {
	if s == Etcd {
		return 2500 * time.Millisecond
	}
	return 0
}

// Networked reports whether pods reach the store over TCP, so that a fault proxy
// can stand between them.
func (s Store) Networked() bool { return s != SQLite }

// Prepare creates the lock table on the store at dsn (for Redis: nothing; the
// env is the run's own) and returns a function that drops it, or deletes the
// env's keys.
func (s Store) Prepare(ctx context.Context, dsn, table string) (cleanup func() error, err error) {
	if s == Etcd {
		c, err := newEtcdClient(dsn)
		if err != nil {
			return nil, err
		}
		if _, err := c.Get(ctx, "health"); err != nil {
			return nil, errors.Join(fmt.Errorf("chaos: etcd at %s: %w", dsn, err), c.Close())
		}
		return func() error {
			defer c.Close()
			_, err := c.Delete(context.Background(), shedlocketcd.KeyPrefix+":"+table+":", clientv3.WithPrefix())
			return err
		}, nil
	}
	if s == Redis {
		c := redis.NewClient(&redis.Options{Addr: dsn})
		if err := c.Ping(ctx).Err(); err != nil {
			return nil, errors.Join(fmt.Errorf("chaos: Redis at %s: %w", dsn, err), c.Close())
		}
		return func() error {
			defer c.Close()
			return deleteKeys(context.Background(), c, shedlockredis.KeyPrefix+":"+table+":*")
		}, nil
	}
	db, err := s.open(dsn)
	if err != nil {
		return nil, err
	}
	var ensure func(context.Context) error
	switch s {
	case MySQL:
		p, perr := shedlock.NewMySQLProvider(db, shedlock.WithTableName(table))
		ensure, err = func(ctx context.Context) error { return p.EnsureTable(ctx) }, perr
	case Postgres:
		p, perr := shedlock.NewPostgresProvider(db, shedlock.WithTableName(table))
		ensure, err = func(ctx context.Context) error { return p.EnsureTable(ctx) }, perr
	case SQLite:
		p, perr := shedlock.NewSQLiteProvider(db, shedlock.WithTableName(table))
		ensure, err = func(ctx context.Context) error { return p.EnsureTable(ctx) }, perr
	}
	if err == nil {
		err = ensure(ctx)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("chaos: lock table %s on %s: %w", table, s, err), db.Close())
	}
	return func() error {
		defer db.Close()
		_, err := db.ExecContext(context.Background(), "DROP TABLE IF EXISTS "+table)
		return err
	}, nil
}

func deleteKeys(ctx context.Context, c *redis.Client, pattern string) error {
	iter := c.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		if err := c.Del(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}

// open opens a pool on an SQL store.
func (s Store) open(dsn string) (*sql.DB, error) {
	driver := string(s)
	switch s {
	case Postgres:
		driver = "pgx"
	case SQLite:
		dsn = "file:" + dsn + "?" + shedlock.SQLiteDSNParams
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("chaos: open %s: %w", s, err)
	}
	return db, nil
}

// Addr returns the host:port that dsn reaches.
func (s Store) Addr(dsn string) (string, error) {
	switch s {
	case MySQL:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", fmt.Errorf("chaos: %w", err)
		}
		return cfg.Addr, nil
	case Postgres:
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("chaos: %w", err)
		}
		return u.Host, nil
	case Redis:
		return dsn, nil
	case Etcd:
		first, _, _ := strings.Cut(dsn, ",")
		u, err := url.Parse(first)
		if err != nil {
			return "", fmt.Errorf("chaos: %w", err)
		}
		return u.Host, nil
	}
	return "", fmt.Errorf("chaos: %s is not reached over the network", s)
}

// Via returns dsn with its address replaced by addr (a fault proxy's), with
// timeouts that end a request whose answer a fault lost. A Redis client has
// them whatever its address (see clientOptions).
func (s Store) Via(dsn, addr string) (string, error) {
	switch s {
	case MySQL:
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return "", fmt.Errorf("chaos: %w", err)
		}
		cfg.Addr = addr
		cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = time.Second, 3*time.Second, 3*time.Second
		return cfg.FormatDSN(), nil
	case Postgres:
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("chaos: %w", err)
		}
		u.Host = addr
		q := u.Query()
		q.Set("connect_timeout", "1")
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String(), nil
	case Redis:
		return addr, nil
	case Etcd:
		// The first member only, through the proxy: a fault cuts the pod off.
		return "http://" + addr, nil
	}
	return "", fmt.Errorf("chaos: %s is not reached over the network", s)
}
