package main

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/shedlocketcd"
	"github.com/shedlock-go/shedlock/shedlockredis"
)

// pod is a service's provider on the table under test.
type pod interface {
	shedlock.LockProvider
	LockedBy() string
}

// testTable is a fresh lock table of one store (for Redis, an env of its own),
// and how the command names it.
type testTable struct {
	name  string   // the table, or the Redis env
	where string   // what the command calls it: "table <name>", "env <name>"
	flags []string // -store, -dsn and -table (or -env) for it
	pod   func(t *testing.T) pod
	// keyPrefix begins the keys of a store whose locks are keys (Redis, etcd).
	keyPrefix string
	// keepsFree is whether a released lock stays listed, as a row that is not
	// held: SQL tables keep the row, Redis deletes the key.
	keepsFree bool
	// free frees a lock behind the command's back, as another operator would.
	free func(t *testing.T, name string)
	// setHolder rewrites the holder of a lock by hand, as any client of the
	// store could.
	setHolder func(t *testing.T, name, holder string)
}

func mysqlTable(t *testing.T) testTable {
	dsn := mysqlDSN(t)
	table := newSQLTable(t, openDB(t, "mysql", dsn), newMySQL)
	return testTable{
		name: table, where: "table " + table, keepsFree: true,
		flags: []string{"-store", "mysql", "-dsn", dsn, "-table", table},
		pod: func(t *testing.T) pod {
			p, err := shedlock.NewMySQLProvider(openDB(t, "mysql", dsn), shedlock.WithTableName(table), shedlock.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
		free: sqlFree(func(t *testing.T) (shedlock.Admin, error) {
			return shedlock.NewMySQLProvider(openDB(t, "mysql", dsn), shedlock.WithTableName(table))
		}),
		setHolder: sqlSetHolder(func(t *testing.T) *sql.DB { return openDB(t, "mysql", dsn) }, table,
			"UPDATE TABLE SET locked_by = ? WHERE name = ?"),
	}
}

func postgresTable(t *testing.T) testTable {
	dsn := postgresDSN(t)
	table := newSQLTable(t, openDB(t, "pgx", dsn), newPostgres)
	return testTable{
		name: table, where: "table " + table, keepsFree: true,
		flags: []string{"-store", "postgres", "-dsn", dsn, "-table", table},
		pod: func(t *testing.T) pod {
			p, err := shedlock.NewPostgresProvider(openDB(t, "pgx", dsn), shedlock.WithTableName(table), shedlock.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
		free: sqlFree(func(t *testing.T) (shedlock.Admin, error) {
			return shedlock.NewPostgresProvider(openDB(t, "pgx", dsn), shedlock.WithTableName(table))
		}),
		setHolder: sqlSetHolder(func(t *testing.T) *sql.DB { return openDB(t, "pgx", dsn) }, table,
			"UPDATE TABLE SET locked_by = $1 WHERE name = $2"),
	}
}

func sqliteTable(t *testing.T) testTable {
	file := filepath.Join(t.TempDir(), "app.db")
	open := func(t *testing.T) *sql.DB {
		return openDB(t, "sqlite", "file:"+file+"?"+shedlock.SQLiteDSNParams)
	}
	newPod := func(t *testing.T) pod {
		p, err := shedlock.NewSQLiteProvider(open(t), shedlock.WithLockedBy("pod"))
		require.NoError(t, err)
		return p
	}
	require.NoError(t, newPod(t).(*shedlock.SQLiteProvider).EnsureTable(context.Background()))
	return testTable{
		name: "shedlock", where: "table shedlock", keepsFree: true,
		flags: []string{"-store", "sqlite", "-dsn", file}, pod: newPod,
		free:      sqlFree(func(t *testing.T) (shedlock.Admin, error) { return shedlock.NewSQLiteProvider(open(t)) }),
		setHolder: sqlSetHolder(open, "shedlock", "UPDATE TABLE SET locked_by = ? WHERE name = ?"),
	}
}

func redisTable(t *testing.T) testTable {
	url := redisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	env := uniqueName("cli_")
	prefix := shedlockredis.KeyPrefix + ":" + env + ":"
	t.Cleanup(func() {
		keys, _ := client.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			_ = client.Del(context.Background(), keys...).Err()
		}
	})
	return testTable{
		name: env, where: "env " + env, keyPrefix: prefix,
		flags: []string{"-store", "redis", "-dsn", url, "-env", env},
		pod: func(t *testing.T) pod {
			p, err := shedlockredis.NewProvider(client, shedlockredis.WithEnv(env), shedlockredis.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
		free: func(t *testing.T, name string) {
			require.NoError(t, client.Del(context.Background(), prefix+name).Err())
		},
		setHolder: func(t *testing.T, name, holder string) {
			ctx := context.Background()
			v, err := client.Get(ctx, prefix+name).Result()
			require.NoError(t, err)
			at, _, _ := strings.Cut(v, "@")
			require.NoError(t, client.SetArgs(ctx, prefix+name, at+"@"+holder, redis.SetArgs{KeepTTL: true}).Err())
		},
	}
}

func etcdTable(t *testing.T) testTable {
	url := etcdURL(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + strings.TrimPrefix(url, "etcd://")}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = client.Close() })
	env := uniqueName("cli_")
	prefix := shedlocketcd.KeyPrefix + ":" + env + ":"
	t.Cleanup(func() { _, _ = client.Delete(context.Background(), prefix, clientv3.WithPrefix()) })
	return testTable{
		name: env, where: "env " + env, keyPrefix: prefix,
		flags: []string{"-store", "etcd", "-dsn", url, "-env", env},
		pod: func(t *testing.T) pod {
			p, err := shedlocketcd.NewProvider(client, shedlocketcd.WithEnv(env), shedlocketcd.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
		free: func(t *testing.T, name string) {
			_, err := client.Delete(context.Background(), prefix+name)
			require.NoError(t, err)
		},
		setHolder: func(t *testing.T, name, holder string) {
			ctx := context.Background()
			r, err := client.Get(ctx, prefix+name)
			require.NoError(t, err)
			require.Len(t, r.Kvs, 1)
			at, _, _ := strings.Cut(string(r.Kvs[0].Value), "@")
			_, err = client.Put(ctx, prefix+name, at+"@"+holder, clientv3.WithIgnoreLease())
			require.NoError(t, err)
		},
	}
}

func sqlFree(open func(t *testing.T) (shedlock.Admin, error)) func(t *testing.T, name string) {
	return func(t *testing.T, name string) {
		admin, err := open(t)
		require.NoError(t, err)
		_, err = admin.ForceUnlock(context.Background(), name)
		require.NoError(t, err)
	}
}

// tables are the stores every command is tested on.
func tables() map[string]func(t *testing.T) testTable {
	return map[string]func(t *testing.T) testTable{
		"mysql": mysqlTable, "postgres": postgresTable, "sqlite": sqliteTable, "redis": redisTable,
		"etcd": etcdTable,
	}
}

// forEachTable runs test as a parallel subtest on a fresh table of each store.
func forEachTable(t *testing.T, test func(t *testing.T, tbl testTable)) {
	t.Parallel()
	for name, newTable := range tables() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newTable(t))
		})
	}
}

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command in-process with stdin as its input.
func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// args is the command line: a command, its store flags, then more.
func (tbl testTable) args(command string, more ...string) []string {
	return append(append([]string{command}, tbl.flags...), more...)
}

// syncBuffer is a buffer that a running command writes while a test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ownedBy reports whether the holder by is an acquisition of p: the SQL
// providers write owner#suffix.N, shedlockredis owner:token-N, shedlocketcd
// owner#token.N.
func ownedBy(by string, p pod) bool {
	return strings.HasPrefix(by, p.LockedBy()+".") || strings.HasPrefix(by, p.LockedBy()+":") ||
		strings.HasPrefix(by, p.LockedBy()+"#")
}

// take takes cfg's lock on p.
func take(t *testing.T, p pod, cfg shedlock.LockConfig) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	return l
}
