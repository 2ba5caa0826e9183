package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without -store, the store is told from the DSN's form; pg is PostgreSQL; a
// -store that contradicts a URL scheme is bad usage, not a driver's error later.
func TestResolveStore(t *testing.T) {
	t.Parallel()
	existing := filepath.Join(t.TempDir(), "locks")
	require.NoError(t, os.WriteFile(existing, nil, 0o644))
	for _, tc := range []struct {
		flag, dsn, want, err string
	}{
		{"", "postgres://root@db:5432/app", storePostgres, ""},
		{"", "postgresql://root@db/app?sslmode=disable", storePostgres, ""},
		{"", "POSTGRES://root@db/app", storePostgres, ""},
		{"", "redis://:secret@cache:6379/0", storeRedis, ""},
		{"", "rediss://cache:6380", storeRedis, ""},
		{"", "etcd://etcd-0:2379,etcd-1:2379", storeEtcd, ""},
		{"", "etcds://etcd-0:2379", storeEtcd, ""},
		{"etcd", "redis://cache:6379", "", "-store etcd, but -dsn is a redis URL"},
		{"", "file:/var/lib/app/app.db?mode=rw", storeSQLite, ""},
		{"", "/var/lib/app/app.db", storeSQLite, ""},
		{"", "app.sqlite3", storeSQLite, ""},
		{"", existing, storeSQLite, ""},
		{"", "app@tcp(db:3306)/app", storeMySQL, ""},
		{"", "root:pw@unix(/run/mysqld/mysqld.sock)/app?parseTime=true", storeMySQL, ""},
		{"", "/app", storeMySQL, ""},
		{"", "not a dsn", "", "cannot tell the store from -dsn not a dsn"},
		{"", "mongodb://db/app", "", "cannot tell the store"},
		{"", "host=db user=app dbname=app", "", "cannot tell the store"},
		{"pg", "host=db user=app dbname=app", storePostgres, ""},
		{"PostgreSQL", "postgres://db/app", storePostgres, ""},
		{"mariadb", "app@tcp(db:3306)/app", storeMySQL, ""},
		{"sqlite3", "app@tcp(db:3306)/app", storeSQLite, ""}, // a guess: -store wins
		{"mysql", "postgres://db/app", "", "-store mysql, but -dsn is a postgres URL"},
		{"redis", "postgresql://db/app", "", "-store redis, but -dsn is a postgres URL"},
		{"oracle", "x", "", `-store "oracle": want mysql, postgres (or pg), sqlite, redis or etcd`},
	} {
		got, err := resolveStore(tc.flag, tc.dsn)
		if tc.err != "" {
			var ue usageError
			require.ErrorAs(t, err, &ue, "-store %q -dsn %q", tc.flag, tc.dsn)
			assert.Contains(t, err.Error(), tc.err)
			continue
		}
		require.NoError(t, err, "-store %q -dsn %q", tc.flag, tc.dsn)
		assert.Equal(t, tc.want, got, "-store %q -dsn %q", tc.flag, tc.dsn)
	}
}

// A DSN in a message never shows its password.
func TestQuoteDSNHidesPassword(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "postgres://app:***@db/app", quoteDSN("postgres://app:secret@db/app"))
	assert.Equal(t, "app:***@tcp(db:3306)/app", quoteDSN("app:secret@tcp(db:3306)/app"))
	assert.Equal(t, "app@tcp(db:3306)/app", quoteDSN("app@tcp(db:3306)/app"))
}

// list works with the store told from the DSN alone, and with -store pg.
func TestStoreFromDSN(t *testing.T) {
	t.Parallel()
	pg := postgresTable(t)
	dsn, table := pg.flags[3], pg.name
	for _, args := range [][]string{
		{"list", "-dsn", dsn, "-table", table},
		{"list", "-store", "pg", "-dsn", dsn, "-table", table},
	} {
		r := runCLI(t, "", args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Equal(t, "no locks in table "+table+"\n", r.stdout)
	}
	rd := redisTable(t)
	r := runCLI(t, "", "list", "-dsn", rd.flags[3], "-env", rd.name)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "no locks in env "+rd.name+"\n", r.stdout)
}

// An etcd DSN is its endpoints, comma-separated, with TLS for etcds:// and a
// user and password when given.
func TestEtcdEndpoints(t *testing.T) {
	t.Parallel()
	cfg, err := etcdEndpoints("etcd://etcd-0:2379,etcd-1:2380")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://etcd-0:2379", "http://etcd-1:2380"}, cfg.Endpoints)
	assert.Nil(t, cfg.TLS)
	cfg, err = etcdEndpoints("etcds://ops:s%40cret@etcd-0:2379")
	require.NoError(t, err)
	assert.Equal(t, []string{"https://etcd-0:2379"}, cfg.Endpoints)
	assert.NotNil(t, cfg.TLS)
	assert.Equal(t, "ops", cfg.Username)
	assert.Equal(t, "s@cret", cfg.Password)
	for _, bad := range []string{"etcd://a:1,,b:2", "redis://cache:6379"} {
		_, err := etcdEndpoints(bad)
		var ue usageError
		assert.ErrorAs(t, err, &ue, bad)
	}
}
