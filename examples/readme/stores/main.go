// Command stores opens a provider on each store the README shows, takes one lock
// on each and releases it. Run from the repository root:
//
//	go run ./examples/readme/stores
//	go run ./examples/readme/stores -stores postgres,redis -postgres 'postgres://app@db:5432/app' -redis cache:6379 -env staging
package main

import (
	"cmp"
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// settings are the flags: where each store is, and the names of the lock, the
// table and the Redis env.
type settings struct {
	stores, postgres, sqlite, redis string
	table, env, lock                string
}

func main() {
	var s settings
	flag.StringVar(&s.stores, "stores", "postgres,sqlite,redis", "the stores to try, comma-separated")
	flag.StringVar(&s.postgres, "postgres", cmp.Or(os.Getenv("SHEDLOCK_POSTGRES_DSN"), "postgres://root@127.0.0.1:5432/test"),
		"PostgreSQL URL (default SHEDLOCK_POSTGRES_DSN, else the local server)")
	flag.StringVar(&s.sqlite, "sqlite", "", "SQLite file (default: one in a temporary directory, removed at the end)")
	flag.StringVar(&s.redis, "redis", cmp.Or(os.Getenv("SHEDLOCK_REDIS_ADDR"), "127.0.0.1:6379"),
		"Redis host:port (default SHEDLOCK_REDIS_ADDR, else the local server)")
	flag.StringVar(&s.table, "table", "shedlock", "the lock table of the SQL stores")
	flag.StringVar(&s.env, "env", "readme", "the env of the Redis keys, job-lock:<env>:<name>")
	flag.StringVar(&s.lock, "lock", "readme", "the lock's name")
	flag.Parse()
	if err := run(context.Background(), s); err != nil {
		slog.Error("stores", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, s settings) error {
	if s.sqlite == "" {
		dir, err := os.MkdirTemp("", "shedlock-stores-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		s.sqlite = filepath.Join(dir, "app.db")
	}
	open := map[string]func(context.Context, settings) (shedlock.LockProvider, error){
		"postgres": postgres, "sqlite": sqlite, "redis": redisProvider,
	}
	for _, name := range strings.Split(s.stores, ",") {
		o, ok := open[name]
		if !ok {
			return fmt.Errorf("-stores: unknown store %q (want postgres, sqlite or redis)", name)
		}
		if err := once(ctx, s.lock, func(ctx context.Context) (shedlock.LockProvider, error) { return o(ctx, s) }); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Println(name, "ok")
	}
	return nil
}

func once(ctx context.Context, name string, open func(context.Context) (shedlock.LockProvider, error)) error {
	p, err := open(ctx)
	if err != nil {
		return err
	}
	lock, err := p.TryLock(ctx, shedlock.LockConfig{Name: name, LockAtMostFor: time.Minute})
	if err != nil {
		return err
	}
	return lock.Unlock(ctx)
}

func postgres(ctx context.Context, s settings) (shedlock.LockProvider, error) {
	db, err := sql.Open("pgx", s.postgres) // or lib/pq, driver "postgres"
	if err != nil {
		return nil, err
	}
	provider, err := shedlock.NewPostgresProvider(db, shedlock.WithTableName(s.table)) // Java ShedLock's table; migrations/postgres
	if err != nil {
		return nil, err
	}
	return provider, provider.EnsureTable(ctx)
}

func sqlite(ctx context.Context, s settings) (shedlock.LockProvider, error) {
	db, err := sql.Open("sqlite", "file:"+s.sqlite+"?"+shedlock.SQLiteDSNParams) // one host, several processes
	if err != nil {
		return nil, err
	}
	provider, err := shedlock.NewSQLiteProvider(db, shedlock.WithTableName(s.table))
	if err != nil {
		return nil, err
	}
	return provider, provider.EnsureTable(ctx)
}

func redisProvider(_ context.Context, s settings) (shedlock.LockProvider, error) {
	client := redis.NewClient(&redis.Options{Addr: s.redis, ContextTimeoutEnabled: true})
	return shedlockredis.NewProvider(client, shedlockredis.WithEnv(s.env)) // keys job-lock:<env>:<name>
}
