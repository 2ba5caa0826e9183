package main

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/shedlock-go/shedlock"
	"github.com/shedlock-go/shedlock/internal/testkit/testdb"
)

// pod is a service's provider on the table under test.
type pod interface {
	shedlock.LockProvider
	LockedBy() string
}

// testTable is a fresh lock table of one store, and how the command names it.
type testTable struct {
	name  string   // the table
	flags []string // -store, -dsn and -table for it
	pod   func(t *testing.T) pod
}

func mysqlTable(t *testing.T) testTable {
	dsn := testdb.MySQLDSN(t)
	table := testdb.NewTable(t, testdb.Open(t, nil))
	return testTable{
		name:  table,
		flags: []string{"-store", "mysql", "-dsn", dsn, "-table", table},
		pod: func(t *testing.T) pod {
			p, err := shedlock.NewMySQLProvider(testdb.Open(t, nil), shedlock.WithTableName(table), shedlock.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
	}
}

func postgresTable(t *testing.T) testTable {
	dsn := testdb.PostgresDSN(t)
	table := testdb.NewPostgresTable(t, testdb.OpenPostgres(t, testdb.PGX, nil))
	return testTable{
		name:  table,
		flags: []string{"-store", "postgres", "-dsn", dsn, "-table", table},
		pod: func(t *testing.T) pod {
			p, err := shedlock.NewPostgresProvider(testdb.OpenPostgres(t, testdb.PGX, nil),
				shedlock.WithTableName(table), shedlock.WithLockedBy("pod"))
			require.NoError(t, err)
			return p
		},
	}
}

func sqliteTable(t *testing.T) testTable {
	file := filepath.Join(t.TempDir(), "app.db")
	open := func(t *testing.T) *sql.DB {
		db, err := sql.Open("sqlite", "file:"+file+"?"+shedlock.SQLiteDSNParams)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	newPod := func(t *testing.T) pod {
		p, err := shedlock.NewSQLiteProvider(open(t), shedlock.WithLockedBy("pod"))
		require.NoError(t, err)
		return p
	}
	require.NoError(t, newPod(t).(*shedlock.SQLiteProvider).EnsureTable(context.Background()))
	return testTable{name: "shedlock", flags: []string{"-store", "sqlite", "-dsn", file}, pod: newPod}
}

// tables are the stores every command is tested on.
func tables() map[string]func(t *testing.T) testTable {
	return map[string]func(t *testing.T) testTable{"mysql": mysqlTable, "postgres": postgresTable, "sqlite": sqliteTable}
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

// take takes cfg's lock on p.
func take(t *testing.T, p pod, cfg shedlock.LockConfig) shedlock.Lock {
	t.Helper()
	l, err := p.TryLock(context.Background(), cfg)
	require.NoError(t, err)
	return l
}
