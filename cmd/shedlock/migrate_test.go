package main

import (
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// migrate creates the table, says so, and may run again; list then works on it.
func TestMigrate(t *testing.T) {
	t.Parallel()
	var b [4]byte
	_, _ = rand.Read(b[:])
	table := "shedlock_m_" + hex.EncodeToString(b[:])
	for name, flags := range map[string]func(t *testing.T) []string{
		"mysql": func(t *testing.T) []string {
			dsn := mysqlDSN(t)
			db := openDB(t, "mysql", dsn)
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
			return []string{"-store", "mysql", "-dsn", dsn, "-table", table}
		},
		"postgres": func(t *testing.T) []string {
			dsn := postgresDSN(t)
			db := openDB(t, "pgx", dsn)
			t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
			return []string{"-store", "postgres", "-dsn", dsn, "-table", table}
		},
		"sqlite": func(t *testing.T) []string {
			return []string{"-store", "sqlite", "-dsn", filepath.Join(t.TempDir(), "new.db"), "-table", table}
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := flags(t)
			r := runCLI(t, "", append([]string{"list"}, f...)...)
			require.Equal(t, 1, r.code, "list before migrate")
			for range 2 {
				r = runCLI(t, "", append([]string{"migrate"}, f...)...)
				require.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, "table "+table+" is ready ("+name+")\n", r.stdout)
				assert.Empty(t, r.stderr)
			}
			r = runCLI(t, "", append([]string{"list"}, f...)...)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, "no locks in table "+table+"\n", r.stdout)
		})
	}
}
