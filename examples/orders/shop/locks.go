package shop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// Redis is the lock store that is not one of the data's databases.
const Redis = "redis"

// LockStores are where the jobs can take their locks: any of the databases the
// data can be in, or Redis.
var LockStores = []string{SQLite, MySQL, Postgres, Redis}

// LockStore says where the jobs take their locks.
type LockStore struct {
	// Kind is SQLite, MySQL, Postgres or Redis; "": the data's own database.
	Kind string
	// DSN, as for Open, is a database of Kind other than the data's; "": the
	// data's own database, which must then be of Kind.
	DSN string
	// RedisAddr is Redis's host:port; RedisEnv the env of its keys,
	// job-lock:<env>:<name> ("": Java ShedLock's "default").
	RedisAddr, RedisEnv string
}

// Locks returns the lock provider of ls, whose locks name lockedBy as their
// owner, and a function that closes what it opened. A SQL store's table is
// created if it does not exist.
func (db *DB) Locks(ctx context.Context, ls LockStore, lockedBy string, log *slog.Logger) (shedlock.LockProvider, func() error, error) {
	kind := cmp.Or(ls.Kind, db.D.Name)
	if !slices.Contains(LockStores, kind) {
		return nil, nil, fmt.Errorf("shop: unknown lock store %q (want one of %v)", kind, LockStores)
	}
	var closers []func() error
	closeAll := func() error {
		var errs []error
		for i := len(closers) - 1; i >= 0; i-- {
			errs = append(errs, closers[i]())
		}
		return errors.Join(errs...)
	}
	if kind == Redis {
		if ls.RedisAddr == "" {
			return nil, nil, errors.New("shop: Redis locks need Redis's address")
		}
		client := redis.NewClient(&redis.Options{Addr: ls.RedisAddr, ContextTimeoutEnabled: true})
		opts := []shedlockredis.Option{shedlockredis.WithLockedBy(lockedBy)}
		if ls.RedisEnv != "" {
			opts = append(opts, shedlockredis.WithEnv(ls.RedisEnv))
		}
		p, err := shedlockredis.NewProvider(client, opts...)
		if err != nil {
			return nil, nil, errors.Join(err, client.Close())
		}
		return p, client.Close, nil
	}
	locksDB := db
	if ls.DSN != "" {
		var err error
		if locksDB, err = Open(kind, ls.DSN); err != nil {
			return nil, nil, err
		}
		closers = append(closers, locksDB.Close)
	} else if kind != db.D.Name {
		return nil, nil, fmt.Errorf("shop: locks in %s need a DSN of their own (-lock-dsn): the data is in %s", kind, db.D.Name)
	}
	opts := []shedlock.ProviderOption{shedlock.WithLockedBy(lockedBy), shedlock.WithLogger(log)}
	var p interface {
		shedlock.LockProvider
		EnsureTable(context.Context) error
		Close() error
	}
	var err error
	switch kind {
	case SQLite:
		p, err = shedlock.NewSQLiteProvider(locksDB.DB, opts...)
	case MySQL:
		p, err = shedlock.NewMySQLProvider(locksDB.DB, opts...)
	case Postgres:
		p, err = shedlock.NewPostgresProvider(locksDB.DB, opts...)
	}
	if err != nil {
		return nil, nil, errors.Join(err, closeAll())
	}
	closers = append(closers, p.Close)
	unlock, err := locksDB.setupTurn(ctx)
	if err != nil {
		return nil, nil, errors.Join(err, closeAll())
	}
	err = p.EnsureTable(ctx)
	unlock()
	if err != nil {
		return nil, nil, errors.Join(err, closeAll())
	}
	return p, closeAll, nil
}
