package browser

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	_ "modernc.org/sqlite"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/etcdcluster"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// store is what the tests, the dashboard and the pods use of a lock store:
// the locks, the operator's view, pauses and run-nows. Every store of the
// repository is one.
type store interface {
	shedlock.LockProvider
	shedlock.Admin
	shedlock.Controller
	shedlock.RunRequester
}

// The stores, as podStore.Kind names them.
const (
	mysqlStore    = "MySQL"
	postgresStore = "PostgreSQL"
	sqliteStore   = "SQLite"
	redisStore    = "Redis"
	etcdStore     = "etcd"
)

var storeKinds = []string{mysqlStore, postgresStore, sqliteStore, redisStore, etcdStore}

// podStore is where a test's locks are, as every process opens them: the
// store's kind, its DSN (SQLite: the file; Redis: host:port; etcd: the
// endpoints, comma-separated), and the test's own table (Redis and etcd: the
// env its keys are under).
type podStore struct {
	Kind, Addr, Table string
}

// The environment that hands a podStore to a pod process.
const (
	envStoreKind  = "SHEDLOCK_PODS_STORE"
	envStoreAddr  = "SHEDLOCK_PODS_ADDR"
	envStoreTable = "SHEDLOCK_PODS_TABLE"
)

func (s podStore) env() []string {
	return []string{envStoreKind + "=" + s.Kind, envStoreAddr + "=" + s.Addr, envStoreTable + "=" + s.Table}
}

func podStoreFromEnv() podStore {
	return podStore{Kind: os.Getenv(envStoreKind), Addr: os.Getenv(envStoreAddr), Table: os.Getenv(envStoreTable)}
}

// open opens the store with owner in its holders' names (locked_by), on a
// pool or client of its own; closeStore closes both.
func (s podStore) open(owner string) (st store, closeStore func(), err error) {
	switch s.Kind {
	case redisStore:
		client := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
		p, err := shedlockredis.NewProvider(client, shedlockredis.WithEnv(s.Table), shedlockredis.WithLockedBy(owner))
		return p, func() { _ = client.Close() }, errors.Join(err, closeOnError(err, client.Close))
	case etcdStore:
		client, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(s.Addr, ","), DialTimeout: 5 * time.Second,
			Logger: zap.NewNop()})
		if err != nil {
			return nil, nil, err
		}
		p, err := shedlocketcd.NewProvider(client, shedlocketcd.WithEnv(s.Table), shedlocketcd.WithLockedBy(owner))
		return p, func() { _ = client.Close() }, errors.Join(err, closeOnError(err, client.Close))
	}
	driver, dsn := map[string]string{mysqlStore: "mysql", postgresStore: "pgx", sqliteStore: "sqlite"}[s.Kind], s.Addr
	if driver == "" {
		return nil, nil, fmt.Errorf("no store %q", s.Kind)
	}
	if s.Kind == sqliteStore {
		dsn = "file:" + s.Addr + "?" + shedlock.SQLiteDSNParams
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	opts := []shedlock.ProviderOption{shedlock.WithTableName(s.Table), shedlock.WithLockedBy(owner)}
	switch s.Kind {
	case mysqlStore:
		st, err = shedlock.NewMySQLProvider(db, opts...)
	case postgresStore:
		st, err = shedlock.NewPostgresProvider(db, opts...)
	default:
		st, err = shedlock.NewSQLiteProvider(db, opts...)
	}
	return st, func() { _ = db.Close() }, errors.Join(err, closeOnError(err, db.Close))
}

// closeOnError closes what was opened for a provider that could not be made.
func closeOnError(err error, closeIt func() error) error {
	if err == nil {
		return nil
	}
	return closeIt()
}

// openStore is s.open for the test process, closed when t ends.
func openStore(t *testing.T, s podStore, owner string) store {
	t.Helper()
	st, closeStore, err := s.open(owner)
	require.NoError(t, err)
	t.Cleanup(closeStore)
	return st
}

// eachStore runs test on a fresh table (or env) of every store, in parallel
// subtests. A store without a server skips its subtest, naming the store
// for SHEDLOCK_SKIP_STORES (fails it under CI=true), as the other modules'
// tests do.
func eachStore(t *testing.T, test func(t *testing.T, s podStore)) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			test(t, newPodStore(t, kind))
		})
	}
}

// newPodStore makes a table of the test's own in the store of kind, dropped
// when t ends; Redis and etcd get an env of their own (etcd: a private
// one-member cluster, stopped when t ends).
func newPodStore(t *testing.T, kind string) podStore {
	env := fmt.Sprintf("pods_%d", time.Now().UnixNano())
	switch kind {
	case mysqlStore:
		return podStore{kind, testdb.MySQLDSN(t), testdb.NewControlTable(t, testdb.Open(t, nil))}
	case postgresStore:
		db := testdb.OpenPostgres(t, testdb.PGX, nil)
		return podStore{kind, testdb.PostgresURL(t, nil), testdb.NewControlPostgresTable(t, db)}
	case sqliteStore:
		s := podStore{kind, filepath.Join(t.TempDir(), "locks.db"), "shedlock"}
		st := openStore(t, s, "setup")
		require.NoError(t, st.(interface{ EnsureTable(context.Context) error }).EnsureTable(context.Background()))
		return s
	case redisStore:
		s := podStore{kind, testdb.RedisAddr(t), env}
		t.Cleanup(func() { dropRedisEnv(t, s) })
		return s
	case etcdStore:
		return podStore{kind, strings.Join(etcdcluster.New(t, 1).Endpoints(), ","), env}
	}
	t.Fatalf("no store %q", kind)
	return podStore{}
}

// dropRedisEnv deletes the env's keys: the locks, and the pause and run-now
// keys beside them.
func dropRedisEnv(t *testing.T, s podStore) {
	client := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer client.Close()
	ctx := context.Background()
	iter := client.Scan(ctx, 0, "*"+s.Table+"*", 1000).Iterator()
	for iter.Next(ctx) {
		_ = client.Del(ctx, iter.Val()).Err()
	}
	if err := iter.Err(); err != nil {
		t.Logf("redis: the env's keys were left: %v", err)
	}
}
