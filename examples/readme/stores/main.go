// Command stores opens a provider on each store the README shows, takes one lock
// on each and releases it.
//
//	go run ./readme/stores
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

func main() {
	ctx := context.Background()
	for name, open := range map[string]func(context.Context) (shedlock.LockProvider, error){
		"postgres": postgres, "sqlite": sqlite, "redis": redisProvider,
	} {
		if err := once(ctx, open); err != nil {
			slog.Error("stores", "store", name, "error", err)
			os.Exit(1)
		}
		fmt.Println(name, "ok")
	}
}

func once(ctx context.Context, open func(context.Context) (shedlock.LockProvider, error)) error {
	p, err := open(ctx)
	if err != nil {
		return err
	}
	lock, err := p.TryLock(ctx, shedlock.LockConfig{Name: "readme", LockAtMostFor: time.Minute})
	if err != nil {
		return err
	}
	return lock.Unlock(ctx)
}

func postgres(ctx context.Context) (shedlock.LockProvider, error) {
	db, err := sql.Open("pgx", "postgres://root@127.0.0.1:5432/test") // or lib/pq, driver "postgres"
	if err != nil {
		return nil, err
	}
	provider, err := shedlock.NewPostgresProvider(db) // Java ShedLock's table; migrations/postgres
	if err != nil {
		return nil, err
	}
	return provider, provider.EnsureTable(ctx)
}

func sqlite(ctx context.Context) (shedlock.LockProvider, error) {
	file := filepath.Join(os.TempDir(), "app.db")
	db, err := sql.Open("sqlite", "file:"+file+"?"+shedlock.SQLiteDSNParams) // one host, several processes
	if err != nil {
		return nil, err
	}
	provider, err := shedlock.NewSQLiteProvider(db)
	if err != nil {
		return nil, err
	}
	return provider, provider.EnsureTable(ctx)
}

func redisProvider(context.Context) (shedlock.LockProvider, error) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	return shedlockredis.NewProvider(client, shedlockredis.WithEnv("prod")) // keys job-lock:prod:<name>
}
