package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad input is one line on stderr, naming the problem, and a non-zero status:
// 2 for the command line, 1 for the store, the table or the lock.
func TestBadInput(t *testing.T) {
	t.Parallel()
	mysqlDSN, postgresDSN, redisURL := mysqlDSN(t), postgresDSN(t), redisURL(t)
	tbl := sqliteTable(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no command", []string{}, 2, "shedlock: no command: want list, unlock, migrate, watch, pause, resume, run or serve"},
		{"unknown command", []string{"lsit"}, 2, `shedlock: unknown command "lsit"`},
		{"unknown flag", tbl.args("list", "-verbose"), 2, "shedlock list: flag provided but not defined: -verbose"},
		{"unknown flag first", []string{"-verbose", "list"}, 2, "shedlock: flag provided but not defined: -verbose"},
		{"bad duration", tbl.args("watch", "-interval", "soon"), 2, `shedlock watch: invalid value "soon" for flag -interval`},
		{"zero interval", tbl.args("watch", "-interval", "0s"), 2, "shedlock watch: -interval 0s: must be > 0"},
		{"no DSN", []string{"list", "-store", "sqlite"}, 2, "shedlock list: no DSN: give -dsn or set SHEDLOCK_DSN"},
		{"unknown store", []string{"list", "-store", "oracle", "-dsn", "x"}, 2, `shedlock list: -store "oracle": want mysql, postgres (or pg), sqlite, redis or etcd`},
		{"store not told by the DSN", []string{"list", "-dsn", "not a dsn"}, 2,
			`shedlock list: cannot tell the store from -dsn not a dsn: give -store mysql, postgres, sqlite, redis or etcd`},
		{"store contradicts the DSN", []string{"list", "-store", "mysql", "-dsn", "postgres://root@127.0.0.1:1/test"}, 2,
			"shedlock list: -store mysql, but -dsn is a postgres URL: drop -store, or give a mysql DSN"},
		{"bad table name", tbl.args("list", "-table", "locks; DROP TABLE x"), 2, "is not a plain identifier"},
		{"table for redis", []string{"list", "-dsn", "redis://127.0.0.1:1/0", "-table", "t"}, 2, "shedlock list: -table: Redis has no table"},
		{"env for SQL", tbl.args("list", "-env", "prod"), 2, "shedlock list: -env: only for redis"},
		{"bad env", []string{"list", "-dsn", "redis://127.0.0.1:1/0", "-env", "a:b"}, 2, `shedlock list: -env "a:b": must be non-empty and without ':'`},
		{"migrate redis", []string{"migrate", "-dsn", "redis://127.0.0.1:1/0"}, 2, "shedlock migrate: migrate: Redis needs no table"},
		{"migrate etcd", []string{"migrate", "-dsn", "etcd://127.0.0.1:1"}, 2, "shedlock migrate: migrate: etcd needs no table"},
		{"table for etcd", []string{"list", "-dsn", "etcd://127.0.0.1:1", "-table", "t"}, 2, "shedlock list: -table: etcd has no table"},
		{"unlock without name", tbl.args("unlock"), 2, "shedlock unlock: unlock takes one lock name, got 0 arguments"},
		{"unlock two names", tbl.args("unlock", "a", "b"), 2, "got 2 arguments"},
		{"list with argument", tbl.args("list", "x"), 2, `shedlock list: list takes no arguments, got ["x"]`},
		{"unreachable mysql", []string{"list", "-dsn", "root@tcp(127.0.0.1:1)/test"}, 1, "shedlock list: connect to mysql: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"bad mysql DSN", []string{"list", "-store", "mysql", "-dsn", "not a dsn"}, 2, "shedlock list: -dsn: not a MySQL DSN"},
		{"missing mysql table", []string{"list", "-dsn", mysqlDSN, "-table", "no_such_table"}, 1,
			"shedlock list: store cannot keep locks safely: table no_such_table does not exist"},
		{"missing table names every way to make it", []string{"list", "-dsn", mysqlDSN, "-table", "no_such_table"}, 1,
			"create it with the provider's EnsureTable, with the command `shedlock migrate -dsn ... -table no_such_table`, " +
				"or with your migration tool from migrations/mysql/0001_create_shedlock.up.sql"},
		{"unreachable postgres", []string{"list", "-dsn", "postgres://root@127.0.0.1:1/test"}, 1, "shedlock list: connect to postgres: "},
		{"bad postgres DSN", []string{"list", "-store", "pg", "-dsn", "postgres://%zz"}, 2, "shedlock list: -dsn: not a PostgreSQL DSN"},
		{"bad postgres DSN inferred", []string{"list", "-dsn", "postgresql://root@127.0.0.1:notaport/test"}, 2, "shedlock list: -dsn: not a PostgreSQL DSN"},
		{"missing postgres table", []string{"list", "-dsn", postgresDSN, "-table", "no_such_table"}, 1,
			`table "no_such_table" does not exist`},
		{"missing sqlite file", []string{"list", "-dsn", filepath.Join(t.TempDir(), "none.db")}, 1,
			"no such file or directory (migrate creates the file)"},
		{"missing sqlite table", tbl.args("unlock", "-table", "other", "job"), 1, "table other does not exist"},
		{"unknown lock", tbl.args("unlock", "-force", "nope"), 1, `shedlock unlock: no such lock: "nope"`},
		{"unreachable redis", []string{"list", "-dsn", "redis://127.0.0.1:1/0"}, 1, "shedlock list: connect to redis at 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused"},
		{"bad redis DSN", []string{"list", "-dsn", "redis://127.0.0.1:6379/notadb"}, 2, "shedlock list: -dsn: not a Redis URL"},
		{"unknown redis lock", []string{"unlock", "-force", "-dsn", redisURL, "-env", uniqueName("none_"), "nope"}, 1, `shedlock unlock: no such lock: "nope" in env none_`},
		{"short timeout", []string{"list", "-dsn", mysqlDSN, "-timeout", "1ns"}, 1, "deadline exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", tc.args...)
			assert.Equal(t, tc.code, r.code, "exit status; stderr %q", r.stderr)
			assert.Empty(t, r.stdout)
			require.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %q", r.stderr)
			assert.True(t, strings.HasSuffix(r.stderr, "\n"))
			assert.Contains(t, r.stderr, tc.msg)
			assert.True(t, strings.HasPrefix(r.stderr, "shedlock"), r.stderr)
			assert.LessOrEqual(t, strings.Count(r.stderr, "shedlock: "), 1, "the prefix once: %q", r.stderr)
			if tc.code == 2 {
				assert.Contains(t, r.stderr, "(shedlock -h shows the usage)")
			}
		})
	}
}

// -h prints the usage on stdout and exits 0, before or after a command.
func TestHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-h"}, {"help"}, {"list", "-h"}, {"-help"}} {
		r := runCLI(t, "", args...)
		assert.Equal(t, 0, r.code, "%v", args)
		assert.True(t, strings.HasPrefix(r.stdout, "Usage: shedlock"), "%v: %q", args, r.stdout)
		assert.Empty(t, r.stderr)
	}
}

// The store, DSN and table come from the environment when no flag gives them;
// a flag wins over the environment.
func TestEnvironment(t *testing.T) {
	tbl := sqliteTable(t)
	t.Setenv("SHEDLOCK_STORE", "sqlite")
	t.Setenv("SHEDLOCK_DSN", tbl.flags[3])
	t.Setenv("SHEDLOCK_TABLE", "shedlock")
	r := runCLI(t, "", "list")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "no locks in table shedlock\n", r.stdout)

	t.Setenv("SHEDLOCK_TABLE", "other")
	r = runCLI(t, "", "list")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "table other does not exist")
	r = runCLI(t, "", "list", "-table", "shedlock")
	assert.Equal(t, 0, r.code, r.stderr)
}
